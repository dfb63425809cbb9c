"""Random PTX kernels that tempt every pass, for differential fuzzing.

A kernel is built from a list of *steps* (small tuples of integers, so that
hypothesis can draw and shrink them, and a seeded ``random.Random`` can make
them for the long run in ``benchmarks/``). Every step is turned into valid,
race-free PTX whatever its numbers:

* ``("ld", ptr, off, wide)`` / ``("st", ptr, off, wide)``: global accesses
  through one of four bases -- three pointer parameters ``a``, ``b``, ``c``
  (not ``.noalias``: the launch may pass one buffer twice) and ``a + 16``
  (the same buffer through another register, so offsets overlap) -- into the
  thread's own 64-byte window; ``wide`` makes it a ``.v2``;
* ``("alu", op, x, y)``: u32/f32 arithmetic on defined registers;
* ``("carry", x, y, z, w)``: an ``add.cc``/``addc`` (or ``sub.cc``/``subc``)
  pair, with an unrelated instruction between them;
* ``("guard", x, y)``: a ``setp`` whose predicate guards the next step
  (guarded steps only write registers that are already defined);
* ``("branch", x, n)``: ``@%p bra`` over the next ``n`` steps (the skipped
  steps write only defined registers and contain no barrier);
* ``("shared", x)``: ``bar.sync; st.shared`` to the thread's slot, then
  ``bar.sync; ld.shared`` of the neighbour's slot (a barrier tempts every
  reorder);
* ``("atom", ptr, off, x)``: ``atom.global.add`` into the thread's window;
* ``("prefetch", ptr, off)``; ``("clock", x)``: a ``%clock`` read;
* ``("warp", x, y, z)``: ``bar.sync; st.shared`` to the thread's slot, then
  ``bar.sync; ldmatrix.sync.aligned.m8n8.x1[.trans]`` of the rows the other
  warp wrote (lanes 0-7 address them; :data:`THREADS` is two warps), and with ``z``
  an ``mma.sync.aligned`` of that fragment: warp-wide instructions whose
  results come from other lanes, never guarded or skipped (the whole warp
  executes them).

Each thread touches only its own window of each buffer and its own shared
slot (the neighbour's only after a barrier), so the kernel is deterministic
under any schedule: every difference a pass introduces is a bug. At the end
the kernel stores its live values to ``c``, so a wrong value is observable.
"""

from __future__ import annotations

import random

THREADS = 64
WINDOW = 64  # bytes per thread and buffer
N_U32 = 12
N_F32 = 8
STEP_KINDS = ("ld", "st", "alu", "carry", "guard", "branch", "shared", "atom", "prefetch", "clock", "warp")
# the same buffer through a second register, at +16 bytes
PTRS = ("%rd8", "%rd9", "%rd10", "%rd11")
PTR_SPAN = (WINDOW, WINDOW, WINDOW, WINDOW - 16)

HEADER = """.version 8.0
.target sm_89
.address_size 64

.visible .entry fuzz(
	.param .u64 fuzz_param_a,
	.param .u64 fuzz_param_b,
	.param .u64 fuzz_param_c
)
{{
	.reg .pred %p<8>;
	.reg .b32 %r<{nr}>;
	.reg .f32 %f<{nf}>;
	.reg .b64 %rd<16>;
	.reg .f32 %fm<4>;
	.shared .align 16 .b8 fuzz_sm[{smem}];
	ld.param.u64 %rd1, [fuzz_param_a];
	ld.param.u64 %rd2, [fuzz_param_b];
	ld.param.u64 %rd3, [fuzz_param_c];
	cvta.to.global.u64 %rd4, %rd1;
	cvta.to.global.u64 %rd5, %rd2;
	cvta.to.global.u64 %rd6, %rd3;
	mov.u32 %r1, %tid.x;
	mul.wide.u32 %rd7, %r1, {window};
	add.s64 %rd8, %rd4, %rd7;
	add.s64 %rd9, %rd5, %rd7;
	add.s64 %rd10, %rd6, %rd7;
	add.s64 %rd11, %rd8, 16;
	mov.u32 %r2, fuzz_sm;
	shl.b32 %r3, %r1, 2;
	add.s32 %r4, %r2, %r3;
	add.s32 %r5, %r1, 1;
	and.b32 %r5, %r5, {mask};
	shl.b32 %r5, %r5, 2;
	add.s32 %r5, %r2, %r5;
	and.b32 %r6, %r3, -128;
	xor.b32 %r6, %r6, 128;
	and.b32 %r7, %r1, 7;
	shl.b32 %r7, %r7, 4;
	add.s32 %r6, %r6, %r7;
	add.s32 %r6, %r2, %r6;
"""

U0 = 10  # first value register (%r10...), %f10...
CLOCK_REG = U0 + N_U32  # written by clock reads, never read


class _Gen:
    def __init__(self) -> None:
        self.lines: list[str] = []
        self.labels = 0
        self.guard: str | None = None
        self.no_new = 0  # steps left inside a branch region (write defined registers only)
        self.u_def = [True] * 4 + [False] * (N_U32 - 4)
        self.f_def = [True] * 2 + [False] * (N_F32 - 2)

    # -- registers ---------------------------------------------------------
    def u(self, k: int) -> str:
        """A defined u32 register chosen by ``k``."""
        live = [i for i, d in enumerate(self.u_def) if d]
        return f"%r{U0 + live[k % len(live)]}"

    def f(self, k: int) -> str:
        live = [i for i, d in enumerate(self.f_def) if d]
        return f"%f{U0 + live[k % len(live)]}"

    def dst(self, k: int, f: bool) -> str:
        """A destination: any register when this step always executes, else
        a defined one (a skipped or guarded write leaves it as it was)."""
        defined = self.f_def if f else self.u_def
        if self.guard or self.no_new:
            return self.f(k) if f else self.u(k)
        i = k % len(defined)
        defined[i] = True
        return f"%{'f' if f else 'r'}{U0 + i}"

    def emit(self, text: str) -> None:
        g = self.guard
        self.guard = None
        self.lines.append(f"\t{g + ' ' if g else ''}{text}")

    # -- steps ---------------------------------------------------------------
    def step(self, s: tuple) -> None:
        kind = STEP_KINDS[s[0] % len(STEP_KINDS)]
        a = [abs(x) for x in s[1:]] + [0] * 4
        getattr(self, "s_" + kind)(*a[:4])
        if self.no_new:
            self.no_new -= 1
            if not self.no_new:
                self.lines.append(f"$L_skip{self.labels}:")

    def _addr(self, ptr: int, off: int, size: int) -> str:
        p = ptr % len(PTRS)
        slots = PTR_SPAN[p] // size
        return f"[{PTRS[p]}+{(off % slots) * size}]"

    # Every emitter reads its sources *before* choosing its destination, so a
    # source is never the register this step defines for the first time.
    def s_ld(self, ptr, off, wide, _):
        f = bool(off & 1)
        t = "f32" if f else "u32"
        if wide % 3 == 0:
            a = self._addr(ptr, off, 8)
            d1 = self.dst(off, f)
            d2 = self.dst(off + 1, f)
            if d1 == d2:
                self.emit(f"ld.global.{t} {d1}, {self._addr(ptr, off, 4)};")
            else:
                self.emit(f"ld.global.v2.{t} {{{d1}, {d2}}}, {a};")
        else:
            a = self._addr(ptr, off, 4)
            self.emit(f"ld.global.{t} {self.dst(wide, f)}, {a};")

    def s_st(self, ptr, off, wide, x):
        f = bool(x & 1)
        t = "f32" if f else "u32"
        v = self.f if f else self.u
        if wide % 3 == 0:
            self.emit(f"st.global.v2.{t} {self._addr(ptr, off, 8)}, {{{v(x)}, {v(x + 1)}}};")
        else:
            self.emit(f"st.global.{t} {self._addr(ptr, off, 4)}, {v(x)};")

    ALU = ("add.s32", "sub.s32", "mul.lo.s32", "xor.b32", "and.b32", "shl.b32",
           "add.f32", "mul.f32", "fma.rn.f32", "cvt.rn.f32.u32", "cvt.rzi.u32.f32", "min.f32")

    def s_alu(self, op, x, y, _):
        o = self.ALU[op % len(self.ALU)]
        if o == "fma.rn.f32":
            srcs = f"{self.f(x)}, {self.f(y)}, {self.f(x + y)}"
        elif o == "cvt.rn.f32.u32":
            srcs = self.u(x)
        elif o == "cvt.rzi.u32.f32":
            srcs = self.f(x)
        elif o == "shl.b32":
            srcs = f"{self.u(x)}, {y % 32}"
        elif o.endswith("f32"):
            srcs = f"{self.f(x)}, {self.f(y)}"
        else:
            srcs = f"{self.u(x)}, {self.u(y)}"
        to_f = o.endswith("f32") and not o.startswith("cvt.rzi")
        self.emit(f"{o} {self.dst(op, to_f)}, {srcs};")

    def s_carry(self, x, y, z, w):
        lo, hi = ("add.cc", "addc") if w % 2 == 0 else ("sub.cc", "subc")
        g = self.guard
        srcs = f"{self.u(y)}, {self.u(z)}"
        self.emit(f"{lo}.u32 {self.dst(x, False)}, {srcs};")
        # an unrelated instruction between producer and consumer of the carry
        srcs = f"{self.u(x)}, {self.u(w)}"
        self.lines.append(f"\t{g + ' ' if g else ''}mul.lo.s32 {self.dst(z + 1, False) if not g else self.u(z + 1)}, {srcs};")
        self.guard = g
        srcs = f"{self.u(z)}, {self.u(y)}"
        self.emit(f"{hi}.u32 {self.dst(w, False)}, {srcs};")

    def s_guard(self, x, y, _, __):
        p = f"%p{1 + x % 6}"
        self.lines.append(f"\tsetp.lt.u32 {p}, {self.u(x)}, {self.u(y)};")
        self.guard = f"@{'!' if y & 1 else ''}{p}"

    def s_branch(self, x, n, _, __):
        if self.no_new or self.guard:
            return
        self.labels += 1
        self.lines.append(f"\tsetp.ne.u32 %p7, {self.u(x)}, {self.u(x + 1)};")
        self.lines.append(f"\t@%p7 bra $L_skip{self.labels};")
        self.no_new = 1 + n % 3 + 1  # counts this step too

    def _publish(self, x) -> None:
        """``bar.sync; st.shared`` of a value to the thread's slot, then
        ``bar.sync``: every slot written before anyone reads another's."""
        v = self.u(x)
        self.lines.append("\tbar.sync 0;")
        self.lines.append(f"\tst.shared.u32 [%r4], {v};")
        self.lines.append("\tbar.sync 0;")

    def s_shared(self, x, _, __, ___):
        if self.no_new or self.guard:
            return
        self._publish(x)
        self.lines.append(f"\tld.shared.u32 {self.dst(x + 1, False)}, [%r5];")

    def s_warp(self, x, y, z, _):
        # %r6: lane l of warp w addresses row l % 8 of the 128 bytes the OTHER warp's 32 slots hold (a read
        # moved above the barrier sees them stale under a warp-serial schedule)
        if self.no_new or self.guard:
            return
        self._publish(x)
        trans = ".trans" if y & 1 else ""
        d = self.dst(x + 1, False)
        self.lines.append(f"\tldmatrix.sync.aligned.m8n8.x1{trans}.shared.b16 {{{d}}}, [%r6];")
        if z % 2:
            c = [self.f(z + i) for i in range(4)]
            self.lines.append(f"\tmma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {{%fm0, %fm1, %fm2, %fm3}}, "
                              f"{{{d}, {self.u(y)}}}, {{{self.u(z)}}}, {{{', '.join(c)}}};")
            self.lines.append(f"\tadd.f32 {self.dst(z, True)}, %fm{y % 4}, %fm{z % 4};")

    def s_atom(self, ptr, off, x, _):
        a, v = self._addr(ptr, off, 4), self.u(x + 1)
        self.emit(f"atom.global.add.u32 {self.dst(x, False)}, {a}, {v};")

    def s_prefetch(self, ptr, off, _, __):
        self.emit(f"prefetch.global.L1 {self._addr(ptr, off, 4)};")

    def s_clock(self, x, _, __, ___):
        # a timing value, not data: its register is never read or stored
        self.emit(f"mov.u32 %r{CLOCK_REG}, %clock;")

    def finish(self) -> str:
        if self.no_new:
            self.lines.append(f"$L_skip{self.labels}:")
        self.guard = None
        for i, d in enumerate(self.u_def):
            if d:
                self.lines.append(f"\tst.global.u32 [%rd10+{4 * (i % 16)}], %r{U0 + i};")
        for i, d in enumerate(self.f_def):
            if d:
                self.lines.append(f"\tst.global.f32 [%rd9+{4 * (i % 16)}], %f{U0 + i};")
        body = "\n".join(self.lines)
        init = [f"\tadd.s32 %r{U0 + i}, %r1, {17 * i + 3};" for i in range(4)]
        init += [f"\tcvt.rn.f32.u32 %f{U0 + i}, %r{U0 + i};" for i in range(2)]
        return (HEADER.format(nr=CLOCK_REG + 1, nf=U0 + N_F32, smem=4 * THREADS, window=WINDOW,
                              mask=THREADS - 1)
                + "\n".join(init) + "\n" + body + "\n\tret;\n}\n")


def kernel_from_steps(steps) -> str:
    """PTX text of the kernel the steps describe (see the module doc)."""
    g = _Gen()
    for s in steps:
        g.step(tuple(s))
    return g.finish()


def random_steps(rng: random.Random, n: int) -> list[tuple[int, ...]]:
    """``n`` random steps (the long fuzzing run's source)."""
    return [tuple(rng.randrange(1 << 16) for _ in range(5)) for _ in range(n)]


def launch():
    """The launch every fuzz kernel is checked under: one block of
    :data:`THREADS` threads."""
    from ptxopt.equivalence.interpret import Geometry

    return Geometry(grid=(1, 1, 1), block=(THREADS, 1, 1))
