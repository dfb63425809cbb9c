"""Occupancy-aware register budget: ``launch_bounds{minblocks=N}`` (alias
``launch_bounds_2``) gives an entry ``.maxntid`` of its known block size and
``.minnctapersm N`` -- what CUDA's ``__launch_bounds__(threads, N)`` writes.

Where ``maxnreg{n=..}`` picks registers per thread, this picks resident
blocks per SM: ptxas derives the register cap from the block size, N and the
target's register file (the ISA: ``.minnctapersm`` with ``.maxntid`` or
``.reqntid`` "trade-off registers-per-thread against multiprocessor
utilization"). ptxas 13 caps at exactly the largest count whose allocation
fits N blocks by the CUDA occupancy rules (:func:`ptxopt.sim.occupancy.occupancy`:
256-thread blocks on sm_89 get 128/80/64/48/40 registers for N = 2..6),
and may *use* registers up to that cap even where it needed fewer before.

**Where the block size comes from.** A pass sees only the module, so:

* an entry's own ``.reqntid`` (Triton writes one): then only
  ``.minnctapersm`` is added and the ``.reqntid`` is kept (the ISA forbids
  ``.maxntid`` beside it);
* else the option ``block=`` (``launch_bounds{minblocks=2,block=256}``,
  ``block=16x16``): the *performance* launch's block, never the check
  launch's. Callers that hold a performance launch bind it with
  :meth:`Pass.with_launch` (``p.with_launch(launch)`` for each pass of a
  pipeline; other passes return themselves): this sets ``block`` (and, with
  ``entry=``, which kernel the launch is for), so the canonical pipeline
  string, and every cache key made from it, names the block. An explicit
  ``block=`` that disagrees with the launch is an error, not a silent pick.
* ``entry=K``: only kernel K is touched (a launch belongs to one kernel);
  by default every entry is.
* ``shared_bytes=D``: the launch's dynamic shared memory per block (Triton
  kernels declare all of theirs as ``.extern .shared``), counted with the
  static ``.shared`` when checking that N blocks fit; :meth:`with_launch`
  sets it from the launch.

An entry is refused, with its reason, when:

* the block is unknown (no ``.reqntid``, no ``block=``; a ``.maxntid``
  alone only bounds it: the launch may use fewer threads);
* a ``.reqntid`` differs from ``block=`` in any extent, or a ``.maxntid``
  allows a different number of threads (fewer: the launch would fail; more:
  narrowing it would make launches the source allows fail);
* N blocks cannot be resident even at the smallest register allocation:
  more than the per-SM block or warp cap of the target (ptxas then ignores
  ``.minnctapersm`` with a warning), the shared memory of N blocks (static
  plus ``shared_bytes``) exceeds the SM's, or a matrix instruction names
  more registers than the cap (ptxas cannot compile it);
* it uses ``setmaxnreg``, or the source sets ``.maxnreg`` (a register
  budget is chosen already: ptxas would take the smaller of the two caps,
  silently), or a different ``.minnctapersm`` (replaced only with
  ``override=1``).

The target's limits come from :mod:`ptxopt.sim.occupancy` for the module's
``.target`` (:func:`ptxopt.toolchain.arch.resolve_arch`); a target without a
row there is refused.

N is a floor, not a target: where the kernel already fits more than N
blocks, ptxas spends the slack on registers (measured with ptxas 12.9 on
the Triton corpus at 128-thread blocks: ``triton_matmul_f32_ieee`` 40 -> 68
registers for N <= 6, 12 -> 7 resident blocks), so a small N can *lower*
occupancy; whether it pays is the objective's call, not this pass's.
The directives' ISA facts are in :data:`ptxopt.ptx.opcodes.ENTRY_TUNING_DIRECTIVES`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from math import prod
from typing import ClassVar

from ptxopt.ptx.ir import Block, Decl, Function, Imm, Module, PerfDirective
from ptxopt.ptx.opcodes import ENTRY_TUNING_DIRECTIVES, TYPE_BITS
from ptxopt.passes.base import ChangeReport, Pass, PassError
from ptxopt.passes.families import REGISTER_BUDGET
from ptxopt.passes.registry import declare
from ptxopt.analysis.manager import AnalysisManager, PreservedAnalyses
from ptxopt.passes.register_budget import instruction_registers
from ptxopt.sim.occupancy import LIMITS, SmLimits, limits_for, occupancy

#: The most blocks per SM any known target holds (a larger N is refused everywhere).
MINBLOCKS = range(1, max(lim.max_blocks for lim in LIMITS.values()) + 1)


def parse_block(text: str) -> tuple[int, ...]:
    """``"256"``, ``"16x16"``, ``"16x16x1"`` -> extents, trailing 1s dropped."""
    try:
        dims = tuple(int(x, 0) for x in text.lower().split("x"))
    except ValueError:
        raise ValueError(f"block={text!r} is not X, XxY or XxYxZ with positive integers") from None
    if not 1 <= len(dims) <= 3 or min(dims) < 1:
        raise ValueError(f"block={text!r} is not X, XxY or XxYxZ with positive integers")
    while len(dims) > 1 and dims[-1] == 1:
        dims = dims[:-1]
    return dims


def _extents(d: PerfDirective) -> tuple[int, ...]:
    dims = tuple(int(a, 0) for a in d.args)
    return dims + (1,) * (3 - len(dims))


def _show(dims) -> str:
    return "x".join(map(str, parse_block("x".join(map(str, dims)))))


def register_cap(lim: SmLimits, threads: int, blocks: int) -> int | None:
    """The most registers per thread at which ``blocks`` blocks of ``threads``
    threads are resident (by registers alone), or None if none is."""
    return next((r for r in range(lim.max_regs_per_thread, 0, -1)
                 if occupancy(lim.arch, threads, r).limits["registers"] >= blocks), None)


def static_shared_bytes(module: Module, fn: Function) -> int:
    """Bytes of static ``.shared`` memory ``fn`` declares or names, with the
    functions it calls (module-level variables count when an instruction of
    those mentions them; unsized ``.extern`` arrays are dynamic shared
    memory, the launch's, and count 0)."""
    bodies = {f.name: f for f in module.functions if f.body is not None}
    reached, todo, text = {fn.name}, [fn], []
    while todo:
        f = todo.pop()
        text.append(" ".join(str(i) for i in f.instructions()))
        calls = " ".join(str(i) for i in f.instructions() if i.opcode == "call")
        for name, g in bodies.items():
            if name not in reached and _names(name, calls):
                reached.add(name)
                todo.append(g)
    used = " ".join(text)
    total = 0
    for d in module.items:
        if type(d) is Decl and d.space == ".shared":
            total += sum(_size(d, it) for it in d.items if _names(it.name, used))
    for name in reached:
        stack = [bodies[name].body]
        while stack:
            for item in stack.pop().items:
                if type(item) is Block:
                    stack.append(item)
                elif type(item) is Decl and item.space == ".shared":
                    total += sum(_size(item, it) for it in item.items)
    return total


def _names(name: str, text: str) -> bool:
    return re.search(rf"(?<![\w$%]){re.escape(name)}(?![\w$])", text) is not None


def _size(d: Decl, item) -> int:
    t = d.dtype
    n = max(1, TYPE_BITS.get(t[1:], 8) // 8) if t else 1
    for a in d.attrs:
        if a in (".v2", ".v4", ".v8"):
            n *= int(a[2:])
    for dim in item.dims:
        if dim == "":
            return 0
        n *= int(Imm(dim).value())
    return n


@declare
@dataclass(frozen=True)
class LaunchBounds(Pass):
    """``minblocks``: the blocks per SM to make room for. ``block``: the
    performance launch's block (``256``, ``16x16``), needed unless the entry
    has ``.reqntid``. ``entry``: only this kernel. ``shared_bytes``: the
    launch's dynamic shared memory per block. ``override``: replace a
    ``.minnctapersm`` the source set."""

    kind: ClassVar[str] = "launch_bounds"
    aliases: ClassVar[dict[str, dict]] = {"launch_bounds_2": {"minblocks": 2}}
    family: ClassVar[str] = REGISTER_BUDGET
    choices: ClassVar[dict] = {"minblocks": MINBLOCKS}
    uses_launch: ClassVar[bool] = True
    minblocks: int
    block: str = ""
    entry: str = ""
    shared_bytes: int = 0
    override: bool = False

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.block:
            object.__setattr__(self, "block", _show(parse_block(self.block)))
        if self.shared_bytes < 0:
            raise ValueError(f"shared_bytes={self.shared_bytes} is negative")

    @property
    def description(self) -> str:
        return (f"make room for {self.minblocks} resident blocks per SM (.maxntid of the known block, "
                f".minnctapersm {self.minblocks}): ptxas caps registers to fit; needs .reqntid or {{block=..}}")

    def with_launch(self, launch, entry: str | None = None) -> LaunchBounds:
        """This pass for a performance launch (anything with a ``block``
        extent tuple and ``shared_bytes``); see the module doc."""
        block, shared = _show(launch.block), int(getattr(launch, "shared_bytes", 0) or 0)
        if self.block and self.block != block:
            raise PassError(f"'{self}' names block {self.block}, the performance launch uses {block}")
        if self.shared_bytes and self.shared_bytes != shared:
            raise PassError(f"'{self}' names {self.shared_bytes} shared bytes, the performance launch {shared}")
        return replace(self, block=block, shared_bytes=shared, entry=entry or self.entry)

    #: only directives change: the body's analyses stay valid
    preserves = PreservedAnalyses.of("cfg", "loops", "dag", "depgraph")

    def run(self, module: Module, analyses: AnalysisManager | None = None) -> ChangeReport:
        from ptxopt.toolchain.arch import resolve_arch

        report = ChangeReport(self.name)
        arch = resolve_arch(module)
        try:
            lim = limits_for(arch)
        except ValueError as e:
            lim, no_limits = None, str(e)
        version = module.version_tuple
        for fn in module.entries:
            if self.entry and fn.name != self.entry:
                continue
            why = (no_limits if lim is None else None) or self._too_old(version) or self._refusal(module, fn, lim, analyses)
            if isinstance(why, str):
                report.refuse(fn.name, fn.line, why)
            elif why is not None:
                report.change(fn.name, fn.line, why[1])
                fn.directives = why[0]
        if self.entry and all(fn.name != self.entry for fn in module.entries):
            names = ", ".join(fn.name for fn in module.entries) or "none"
            report.refuse(self.entry, 0, f"no kernel named {self.entry} (kernels: {names})")
        return report

    def _too_old(self, version) -> str | None:
        need = ENTRY_TUNING_DIRECTIVES["minnctapersm"][0]
        if version < need:
            return f".minnctapersm needs PTX ISA {need[0]}.{need[1]}; the module is .version {version[0]}.{version[1]}"
        return None

    def _refusal(self, module: Module, fn: Function, lim: SmLimits, analyses: AnalysisManager | None = None):
        """A reason (str), None (nothing to do), or (new directives, what changed)."""
        n = self.minblocks
        if any(i.opcode == "setmaxnreg" for i in fn.instructions()):
            return "the entry uses setmaxnreg, which manages its register count"
        mx = fn.directive(".maxnreg")
        if mx is not None:
            return (f"the source sets .maxnreg {', '.join(mx.args)}: a register budget is chosen already "
                    "(ptxas would silently take the smaller of the two caps)")
        req, most = fn.directive(".reqntid"), fn.directive(".maxntid")
        given = parse_block(self.block) + (1,) * (3 - len(parse_block(self.block))) if self.block else None
        if req is not None and most is not None:
            return ".maxntid and .reqntid are both set (the ISA forbids it; ptxas rejects the entry)"
        if req is not None:
            block = _extents(req)
            if given is not None and given != block:
                return (f".reqntid {_show(block)} differs from the block {_show(given)}: "
                        "a launch with that block would fail")
        elif given is None:
            why = (f".maxntid {_show(_extents(most))} only bounds it" if most is not None else "no .reqntid")
            return f"the block size is unknown ({why}); give {self.kind}{{minblocks={n},block=X[xYxZ]}}"
        else:
            block = given
            if most is not None and prod(_extents(most)) != prod(block):
                have, want = prod(_extents(most)), prod(block)
                return (f".maxntid {_show(_extents(most))} allows {have} threads, the block has {want}: "
                        + ("a launch with that block would fail" if have < want else
                           "lowering it would make launches the source allows fail"))
        threads = prod(block)
        why = self._infeasible(module, fn, lim, threads, analyses)
        if why:
            return why
        cur = fn.directive(".minnctapersm")
        add_max = req is None and most is None
        if cur is not None and cur.args == (str(n),) and not add_max:
            return None
        if cur is not None and cur.args != (str(n),) and not self.override:
            return (f"the source sets .minnctapersm {', '.join(cur.args)} "
                    f"(use {replace(self, override=True)!s} to replace it)")
        new = tuple(d for d in fn.directives if d.name != ".minnctapersm")
        what = []
        if add_max:
            new += (PerfDirective(".maxntid", tuple(map(str, parse_block(_show(block))))),)
            what.append(f"set .maxntid {', '.join(new[-1].args)}")
        new += (PerfDirective(".minnctapersm", (str(n),)),)
        if cur is None:
            what.append(f"set .minnctapersm {n}")
        elif cur.args != (str(n),):
            what.append(f"replaced .minnctapersm {', '.join(cur.args)} with {n}")
        else:
            what.append(f"kept .minnctapersm {n} (ptxas ignored it without a block bound)")
        cap = register_cap(lim, threads, n)
        return new, " and ".join(what) + (f" (ptxas caps registers at {cap} per thread for {n} "
                                          f"block{'s' if n > 1 else ''} of {threads} threads on {lim.arch})")

    def _infeasible(self, module: Module, fn: Function, lim: SmLimits, threads: int,
                    analyses: AnalysisManager | None = None) -> str | None:
        n = self.minblocks
        where = f"on {lim.arch}"
        if threads > lim.max_threads_per_block:
            return f"a block of {threads} threads is over the {lim.max_threads_per_block} a block may have {where}"
        if n > lim.max_blocks:
            return (f".minnctapersm {n} is over the {lim.max_blocks} blocks an SM holds {where} "
                    "(ptxas would ignore it)")
        warps = -(-threads // 32)
        if n * warps > lim.max_warps:
            return (f"{n} blocks of {threads} threads need {n * warps} warps, over the {lim.max_warps} "
                    f"an SM holds {where}: so many blocks can never be resident")
        cap = register_cap(lim, threads, n)
        if cap is None:
            return f"{n} blocks of {threads} threads do not fit the register file {where} at any register count"
        static = static_shared_bytes(module, fn)
        smem = static + self.shared_bytes
        if smem and occupancy(lim.arch, threads, cap, smem).limits["shared memory"] < n:
            what = f"{static} static + {self.shared_bytes} dynamic" if self.shared_bytes else f"{static} static"
            return f"{n} blocks with {what} bytes of shared memory each do not fit an SM {where}"
        need = instruction_registers(fn, analyses)
        if need is not None and need[0] > cap:
            at = f" at line {need[1]}" if need[1] else ""
            return (f"an instruction{at} names {need[0]} registers at once, more than the {cap} that "
                    f"{n} blocks of {threads} threads leave {where}")
        return None
