"""Random cases of the trust classes (the bug classes an adversarial review found), each with an oracle that
does not trust the code under test.

:mod:`.random_kernels` tempts the passes with straight-line global code in
one ``.entry``; it never wrote a ``.func``, a special register inside braces,
an offset near 2**32, a misaligned scalar, registers of two widths at
adjacent addresses or a kernel checked without a contract -- so it could not
find the classes the adversarial round found by hand. Each class here draws
its shape and numbers from a seeded ``random.Random``:

``func_exit``       a ``.func`` returning ``tbl[i]`` vs ``tbl[j]`` (``.reg``
                    or ``.param`` return, ``.reg`` or ``.param`` argument,
                    one ``ret``, a guarded early ``ret``, two ``ret``, a ``ret``
                    in the block after the write, falling off the end; the
                    result stored or used as an index)
``nested_sreg``     ``mov.b64 %rd, {%clock, %clock_hi}`` read twice around
                    memory accesses: the second read replaced by the first
                    (pair), and the reorder passes (accesses must stay inside
                    the timed region)
``wrap_offset``     a 32-bit shared base with a store and a load whose
                    offsets differ by 2**32 (around 0, 2**31 or 2**32): the
                    same bytes; every reorder pass
``misaligned``      a dead narrower load inserted inside an original wide
                    access (scalar or vector), misaligned for its own width
                    (pair)
``mixed_width``     adjacent ``ld.global.u8``/``u16`` into registers of two
                    widths; ``vec_ld`` (ptxas must accept the result)
``hint_before_def`` loads whose address register is defined in various
                    ways; the prefetch passes (every register an inserted
                    prefetch reads must be defined on every path before it)
``no_contract``     ``mul.lo x, %tid.x, 2**k`` vs ``shl x, %tid.x, k±1``
                    checked by :func:`ptxopt.api.check_equivalence` without
                    a contract
``read_only_load``  a plain ``ld.global`` (scalar or vector) after a store
                    that may alias it (through the other parameter or the
                    same one) vs the same load in a read-only form: each row
                    of :data:`ptxopt.ptx.opcodes.READ_ONLY_LOADS` (``ldu``,
                    ``ld.global.nc`` with each cache operator or hint)
``precision``       a float instruction in one precision form vs another
                    form of it (:func:`ptxopt.ptx.opcodes.precision_form`:
                    rounding, ``.ftz``, ``.sat``, ``.approx``/``.full``, no
                    rounding modifier) -- every pair of :data:`PRECISION_FORMS`

Oracles: a pair is a *false proof* when the prover says ``proved`` and the
interpreter, on a real launch, says anything but ``equal``; a pass result is
a finding when ptxas rejects it, the interpreter finds a difference (and a
false proof too when the prover proves that result), an
access left the timed region, or an inserted hint reads a register not
defined on every path (:func:`ptxopt.equivalence.prove.hints.hints_only_legal`); an
unchecked launch is a finding when it is trusted (``identical``,
``hints-only``, ``proved``, ``equal``) while a real launch tells the two
apart. The interpreter and the prover carry the "assumes noalias" cap
(:func:`ptxopt.equivalence.interpret.verify`): a pass result that adds
``.nc`` loads no analysis proves read-only is never ``equal``/``proved``;
it is listed in :attr:`Result.assumed`, not a finding (nothing differed).
The ``read_only_load`` and ``precision`` pairs differ on a GPU by
construction (a stale read; another rounding, flush or hardware
approximation) where one coherent memory and sampled inputs need not show
it, so their oracle is the construction: any ``proved`` or ``equal`` of the
pair is a finding (``untrusted``).
``tests/testing/test_fuzz_trust.py`` runs a few seeds per class;
``benchmarks/reports/fuzz_trust.py`` runs the campaign.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from ptxopt.equivalence.verdict import TRUSTED, Verdict
from ptxopt.passes.families import PREFETCH, REORDER

CLASSES = ("func_exit", "nested_sreg", "wrap_offset", "misaligned", "mixed_width", "hint_before_def",
           "no_contract", "read_only_load", "precision")

HEAD = ".version 8.0\n.target sm_89\n.address_size 64\n"
def _family(family: str) -> tuple[str, ...]:
    """The named passes of one family, from the registry (no second list of pass names)."""
    from ptxopt.passes.registry import get_pass_class, pass_names

    return tuple(n for n in pass_names() if get_pass_class(n).family == family)


REORDERS = _family(REORDER)


@dataclass
class Case:
    cls: str
    seed: int
    what: str
    original: str
    candidate: str | None = None  # a pair ...
    pipelines: tuple[str, ...] = ()  # ... or passes to run on the original
    block: int = 32
    region: tuple[str, str] | None = None  # (first, last) marker of a timed region
    unchecked: bool = False  # the pair is decided without a contract (no_contract)
    untrusted: bool = False  # the pair differs on a GPU by construction: no proof or equal may stand


@dataclass
class Finding:
    cls: str
    seed: int
    what: str
    detail: str

    def __str__(self) -> str:
        return f"{self.cls} seed {self.seed}: {self.what}: {self.detail}"


@dataclass
class Result:
    case: Case
    findings: list[Finding] = field(default_factory=list)
    #: pass results the interpreter could not call ``equal`` because they make an assumption no check
    #: establishes ("assumes noalias": ``nc_ld{assume_noalias=1}``), not a finding: (pipeline, why)
    assumed: list[tuple[str, str]] = field(default_factory=list)


def _entry(body: str, params: str = ".param .u64 out, .param .u64 .ptr .global .align 16 in",
           decls: str = "", regs: str = "") -> str:
    return (f"{HEAD}{decls}\n.visible .entry k({params})\n{{\n"
            "\t.reg .pred %p<8>;\n\t.reg .b16 %rs<8>;\n\t.reg .b32 %r<32>;\n\t.reg .f32 %f<16>;\n"
            f"\t.reg .b64 %rd<16>;\n{regs}"
            "\tld.param.u64 %rd1, [out];\n\tld.param.u64 %rd2, [in];\n"
            "\tcvta.to.global.u64 %rd3, %rd1;\n\tcvta.to.global.u64 %rd4, %rd2;\n"
            "\tmov.u32 %r20, %tid.x;\n\tmul.wide.u32 %rd14, %r20, 64;\n"
            "\tadd.s64 %rd3, %rd3, %rd14;\n\tadd.s64 %rd4, %rd4, %rd14;\n"
            f"{body}\n\tret;\n}}\n")


# -- generators -------------------------------------------------------------------------------------------

def _func_exit(rng: random.Random) -> tuple[str, str, str]:
    width = rng.choice((2, 4))
    i, j = rng.sample(range(width), 2)
    ret = rng.choice(("reg", "param"))
    arg = rng.choice(("reg", "param"))
    shape = rng.choice(("ret", "guarded_early", "two_rets", "fall_off", "ret_next_block"))
    use = rng.choice(("value", "index"))
    elems = ", ".join(f"%a{n}" for n in range(width))
    head = f"\tld.global.v{width}.u32 {{{elems}}}, [%t1];\n"

    def give(n: int) -> str:
        return f"\tmov.b32 %rv, %a{n};\n" if ret == "reg" else f"\tst.param.b32 [rv], %a{n};\n"

    def callee(n: int) -> str:
        other = (n + 1) % width
        if shape == "ret":
            return head + give(n) + "\tret;"
        if shape == "ret_next_block":
            return head + give(n) + "\tbra.uni $X;\n$X:\n\tret;"
        if shape == "fall_off":
            return head + give(n).rstrip("\n")
        if shape == "guarded_early":
            return (head + f"\tsetp.ne.u32 %q1, %a{i}, %a{j};\n" + give(n) + "\t@%q1 ret;\n"
                    + give(other) + "\tret;")
        return (head + f"\tsetp.ne.u32 %q1, %a{i}, %a{j};\n\t@%q1 bra $R;\n" + give(other) + "\tret;\n$R:\n"
                + give(n) + "\tret;")

    rdecl = ".reg .b32 %rv" if ret == "reg" else ".param .b32 rv"
    pdecl = ".reg .b64 %tbl" if arg == "reg" else ".param .b64 tbl"
    load = "\tmov.b64 %t1, %tbl;\n" if arg == "reg" else "\tld.param.u64 %t1, [tbl];\n"
    if arg == "reg" and ret == "reg":
        call = "\tcall (%r3), pick, (%rd4);\n"
    else:
        a = "%rd4" if arg == "reg" else "p0"
        r = "(%r3)" if ret == "reg" else "(r0)"
        call = ("\t{\n" + ("\t.param .b64 p0;\n\tst.param.b64 [p0], %rd4;\n" if arg == "param" else "")
                + ("\t.param .b32 r0;\n" if ret == "param" else "") + f"\tcall {r}, pick, ({a});\n"
                + ("\tld.param.b32 %r3, [r0];\n" if ret == "param" else "") + "\t}\n")
    store = ("\tst.global.u32 [%rd3], %r3;" if use == "value" else
             "\tand.b32 %r4, %r3, 7;\n\tmul.wide.u32 %rd5, %r4, 4;\n\tadd.s64 %rd6, %rd3, %rd5;\n"
             "\tst.global.u32 [%rd6], 1;")

    def module(n: int) -> str:
        fn = (f".func ({rdecl}) pick({pdecl})\n{{\n\t.reg .pred %q<2>;\n\t.reg .b32 %a<4>;\n"
              f"\t.reg .b64 %t<2>;\n{load}{callee(n)}\n}}\n")
        return HEAD + fn + _entry(call + store).split(HEAD, 1)[1]

    return (module(i), module(j), f"{ret} return, {arg} argument, {shape}, result as {use}, "
                                  f"tbl[{i}] vs tbl[{j}] of {width}")


def _timed(rng: random.Random, n: int) -> str:
    out = []
    for k in range(n):
        off = 4 * rng.randrange(8)
        if rng.random() < 0.5:
            out.append(f"\tld.global.u32 %r{8 + k}, [%rd4+{off}];\n\tst.global.u32 [%rd3+{32 + off}], %r{8 + k};\n")
        else:
            out.append(f"\tadd.u32 %r{8 + k}, %r20, {rng.randrange(100)};\n")
    return "".join(out)


def _nested_sreg(rng: random.Random) -> tuple[str, str, str]:
    body = _timed(rng, rng.randrange(1, 5))
    first = "\tmov.b64 %rd5, {%clock, %clock_hi};\n"
    tail = "\tsub.s64 %rd7, %rd6, %rd5;\n\tst.global.u64 [%rd3+8], %rd7;"
    a = _entry(first + body + "\tmov.b64 %rd6, {%clock, %clock_hi};\n" + tail)
    b = _entry(first + body + "\tmov.b64 %rd6, %rd5;\n" + tail)
    return a, b, "t2 - t1 with {%clock, %clock_hi} vs 0"


_WRAP = 1 << 32


def _wrap_offset(rng: random.Random) -> tuple[str, str]:
    d = 4 * rng.randrange(-4, 5)
    family = rng.choice(("around 0", "around 2^32", "around 2^31", "around 2^63"))
    if family == "around 2^63":
        # 64-bit global: %rd9 = %rd4 + 4 - 2**63; [%rd9 + 2**63 - 4] is %rd4 (an 8-byte store) and
        # [%rd9 - 2**63] is %rd4 + 4 modulo 2**64 (a 4-byte load of its upper half)
        body = ("\tadd.s64 %rd9, %rd4, -9223372036854775804;\n\tld.global.u64 %rd10, [%rd4+8];\n"
                "\tst.global.u64 [%rd9+9223372036854775804], %rd10;\n"
                "\tld.global.u32 %r2, [%rd9+-9223372036854775808];\n\tst.global.u32 [%rd3], %r2;")
        return _entry(body), "st.global.u64 [%rd9+(2^63-4)] then ld.global.u32 [%rd9-2^63] (around 2^63)"
    if family == "around 0":
        o1, o2, base = d, d + _WRAP, 64
    elif family == "around 2^32":
        o1, o2, base = d - _WRAP + 64, d + 64, 0
    else:
        o1, o2, base = (1 << 31) + d, -(1 << 31) + d, 64 - (1 << 31)
    if rng.random() < 0.5:
        o1, o2 = o2, o1
    body = (f"\tmov.u32 %r1, sm;\n\tadd.u32 %r1, %r1, {base % _WRAP};\n\tshl.b32 %r9, %r20, 2;\n"
            f"\tadd.u32 %r1, %r1, %r9;\n"
            f"\tld.global.u32 %r2, [%rd4];\n\tst.shared.u32 [%r1+{o1}], %r2;\n"
            f"\tld.shared.u32 %r3, [%r1+{o2}];\n\tst.global.u32 [%rd3], %r3;")
    return (_entry(body, decls=".shared .align 4 .b8 sm[512];\n"),
            f"st.shared [%r1+{o1}] then ld.shared [%r1+{o2}] ({family})")


_WIDE = (("u64", 1, 8), ("v2.u32", 2, 4), ("v4.u32", 4, 4), ("v2.u64", 2, 8), ("v2.f32", 2, 4))
_DEST = {2: ("u16", "%rs7"), 4: ("u32", "%r31"), 8: ("u64", "%rd15")}


def _misaligned(rng: random.Random) -> tuple[str, str, str]:
    t, n, esz = rng.choice(_WIDE)
    size = n * esz
    w = rng.choice([x for x in (2, 4, 8) if x < size])
    m = rng.choice([x for x in range(1, size - w + 1) if x % w])
    base_off = size * rng.randrange(4)
    reg = {"u64": "%rd", "u32": "%r", "f32": "%f"}[t.split(".")[-1]]
    dests = ", ".join(f"{reg}{8 + k}" for k in range(n))
    dest = dests if n == 1 else "{" + dests + "}"
    load = f"\tld.global.{t} {dest}, [%rd4+{base_off}];\n"
    store = f"\tst.global.{t} [%rd3+{base_off}], {dest};"
    ty, r = _DEST[w]
    extra = f"\tld.global.{ty} {r}, [%rd4+{base_off + m}];\n"
    where = rng.choice(("before", "after"))
    cand = extra + load + store if where == "before" else load + extra + store
    return _entry(load + store), _entry(cand), f"ld.global.{ty} at +{m} inside ld.global.{t} ({where})"


def _mixed_width(rng: random.Random) -> tuple[str, str]:
    ty, size = rng.choice((("u16", 2), ("u8", 1)))
    n = rng.choice((2, 4))
    regs = [rng.choice(("%rs", "%r")) for _ in range(n)]
    if len(set(regs)) == 1:
        regs[rng.randrange(n)] = "%r" if regs[0] == "%rs" else "%rs"
    loads, stores = [], []
    for k, rc in enumerate(regs):
        loads.append(f"\tld.global.{ty} {rc}{1 + k}, [%rd4+{k * size}];\n")
        stores.append(f"\tst.global.{ty} [%rd3+{k * size}], {rc}{1 + k};\n")
    return _entry("".join(loads) + "".join(stores).rstrip("\n")), f"{n} x ld.global.{ty} into {'/'.join(regs)}"


_ADDRESS_DEFS = (
    ("add", "\tadd.s64 %rd5, %rd4, {o};\n"),
    ("mad.wide", "\tmad.wide.u32 %rd5, %r20, 0, %rd4;\n"),
    ("mov vector", "\tmov.b64 {{%r10, %r11}}, %rd4;\n\tmov.b64 %rd5, {{%r10, %r11}};\n"),
    ("ld.param", "\tld.param.u64 %rd5, [in];\n\tcvta.to.global.u64 %rd5, %rd5;\n\tadd.s64 %rd5, %rd5, %rd14;\n"),
    ("selp", "\tsetp.ne.u32 %p2, %r20, 1000;\n\tadd.s64 %rd6, %rd4, {o};\n\tselp.b64 %rd5, %rd6, %rd4, %p2;\n"),
    ("redefined", "\tadd.s64 %rd5, %rd4, 256;\n\tld.global.u32 %r12, [%rd5+-256];\n\tadd.s64 %rd5, %rd4, {o};\n"),
    ("cache policy", "\tcreatepolicy.fractional.L2::evict_last.b64 %rd9, 1.0;\n\tadd.s64 %rd5, %rd4, {o};\n"),
    ("vector with a sink", "\tld.global.v2.u64 {{%rd5, _}}, [%rd4];\n\tsub.s64 %rd5, %rd5, %rd5;\n"
                           "\tadd.s64 %rd5, %rd4, %rd5;\n"),
    ("nested scope", "\t{{\n\t.reg .b64 %rd5;\n\tadd.s64 %rd5, %rd4, {o};\n\tld.global.u32 %r13, [%rd5];\n\t}}\n"
                     "\tadd.s64 %rd5, %rd4, {o};\n"),
)


def _hint_before_def(rng: random.Random) -> tuple[str, str]:
    name, tmpl = rng.choice(_ADDRESS_DEFS)
    o = 4 * rng.randrange(8)
    pre = "".join(f"\tld.global.u32 %r{2 + k}, [%rd4+{4 * k}];\n" for k in range(rng.randrange(3)))
    use = ("\tld.global.L2::cache_hint.u32 %r1, [%rd5], %rd9;\n" if name == "cache policy"
           else "\tld.global.u32 %r1, [%rd5];\n")
    body = pre + tmpl.format(o=o) + use + "\tst.global.u32 [%rd3], %r1;"
    return _entry(body), f"address defined by {name}"


def _no_contract(rng: random.Random) -> tuple[str, str, str]:
    k = rng.randrange(1, 10)
    wrong = k + rng.choice((-1, 1))
    src = rng.choice(("%tid.x", "%ctaid.x"))
    head = f"\tmov.u32 %r1, {src};\n"
    tail = "\tst.global.u32 [%rd3], %r2;"
    return (_entry(head + f"\tmul.lo.s32 %r2, %r1, {1 << k};\n" + tail),
            _entry(head + f"\tshl.b32 %r2, %r1, {wrong};\n" + tail), f"x*{1 << k} vs x<<{wrong} of {src}")


#: A plain global load turned into each read-only form (:data:`ptxopt.ptx.opcodes.READ_ONLY_LOADS`).
READ_ONLY_FORMS = ("ldu.global", "ld.global.nc", "ld.global.nc.ca", "ld.global.nc.cg", "ld.global.nc.cs",
                   "ld.global.nc.L1::evict_last", "ld.global.nc.L1::no_allocate", "ld.global.nc.L2::128B")
_RO_TYPES = (("u32", "%r", 4), ("f32", "%f", 4), ("u64", "%rd", 8))


def _read_only_load(rng: random.Random) -> tuple[str, str, str]:
    t, reg, size = rng.choice(_RO_TYPES)
    n = rng.choice((1, 2, 4)) if t != "u64" else rng.choice((1, 2))
    form = rng.choice(READ_ONLY_FORMS)
    first = 8 if reg == "%rd" else 2
    dests = [f"{reg}{first + k}" for k in range(n)]
    dest = dests[0] if n == 1 else "{" + ", ".join(dests) + "}"
    vec = "" if n == 1 else f".v{n}"
    at = size * n * rng.randrange(4)
    through = rng.choice(("the other parameter", "the same parameter", "the same bytes"))
    base, off = {"the other parameter": ("%rd3", 4 * rng.randrange(16)), "the same parameter": ("%rd4", 64 + 4 * rng.randrange(8)),
                 "the same bytes": ("%rd4", at)}[through]
    store = f"\tmov.u32 %r1, {rng.randrange(1 << 16)};\n\tst.global.u32 [{base}+{off}], %r1;\n"
    pre = f"\tld.global.u32 %r12, [%rd4+{4 * rng.randrange(16)}];\n" if rng.random() < 0.5 else ""
    out = "".join(f"\tst.global.{t} [%rd3+{32 + size * k}], {d};\n" for k, d in enumerate(dests)).rstrip("\n")

    def body(op: str) -> str:
        return pre + store + f"\t{op}{vec}.{t} {dest}, [%rd4+{at}];\n" + out

    return (_entry(body("ld.global")), _entry(body(form)),
            f"ld.global{vec}.{t} -> {form}{vec}.{t} after a store through {through}")


#: Precision forms of float instructions (PTX ISA: ``add{.rnd}{.ftz}{.sat}.f32``, ``div.approx``/``.full``/
#: ``.rnd``, ``rcp.approx``/``.rnd``, ``cvt.frnd2{.ftz}{.sat}``...): opcode -> (operands, forms, result type).
PRECISION_FORMS = {
    "add": (2, ("", "rn", "rz", "rm", "rp", "ftz", "rn.ftz", "sat", "rn.sat", "rz.ftz.sat"), "f32"),
    "mul": (2, ("", "rn", "rz", "rm", "rp", "ftz", "rn.ftz", "sat"), "f32"),
    "sub": (2, ("", "rn", "rm", "ftz", "sat"), "f32"),
    "fma": (3, ("rn", "rz", "rm", "rp", "rn.ftz", "rn.sat", "rn.ftz.sat"), "f32"),
    "div": (2, ("rn", "rz", "rm", "rp", "rn.ftz", "approx", "approx.ftz", "full", "full.ftz"), "f32"),
    "rcp": (1, ("rn", "rz", "rm", "rp", "rn.ftz", "approx", "approx.ftz"), "f32"),
    "sqrt": (1, ("rn", "rz", "rm", "rp", "rn.ftz", "approx", "approx.ftz"), "f32"),
    "rsqrt": (1, ("approx", "approx.ftz"), "f32"),
    "ex2": (1, ("approx", "approx.ftz"), "f32"),
    "lg2": (1, ("approx", "approx.ftz"), "f32"),
    "sin": (1, ("approx", "approx.ftz"), "f32"),
    "cos": (1, ("approx", "approx.ftz"), "f32"),
    "cvt": (1, ("rni", "rzi", "rmi", "rpi", "rni.ftz", "rzi.sat"), "s32"),
}
_NONNEGATIVE = frozenset({"sqrt", "rsqrt", "lg2"})


def _precision(rng: random.Random) -> tuple[str, str, str]:
    op = rng.choice(sorted(PRECISION_FORMS))
    arity, forms, rtype = PRECISION_FORMS[op]
    before, after = rng.sample(forms, 2)
    srcs = ["%f1", "%f2", "%f3"][:arity]
    loads = "".join(f"\tld.global.f32 %f{1 + k}, [%rd4+{4 * k}];\n" for k in range(arity))
    pre = "".join(f"\tabs.f32 {r}, {r};\n" for r in srcs) if op in _NONNEGATIVE else ""
    if rng.random() < 0.5:  # a scaled input: subnormal, huge or exactly 1
        scale = rng.choice(("0f00800000", "0f7e800000", "0f3f800000", "0f34000000"))
        pre += f"\tmul.rn.f32 %f1, %f1, {scale};\n"
    dest, store = ("%r5", "\tst.global.u32 [%rd3], %r5;") if rtype == "s32" else ("%f5", "\tst.global.f32 [%rd3], %f5;")
    types = ".s32.f32" if op == "cvt" else ".f32"

    def body(form: str) -> str:
        mods = f".{form}" if form else ""
        return loads + pre + f"\t{op}{mods}{types} {dest}, {', '.join(srcs)};\n" + store

    return (_entry(body(before)), _entry(body(after)),
            f"{op}{'.' + before if before else ''}{types} -> {op}{'.' + after if after else ''}{types}")


def make_case(cls: str, seed: int) -> Case:
    """The case of class ``cls`` for ``seed`` (deterministic)."""
    rng = random.Random(f"{cls}/{seed}")
    if cls == "func_exit":
        a, b, what = _func_exit(rng)
        return Case(cls, seed, what, a, b, block=1)
    if cls == "nested_sreg":
        a, b, what = _nested_sreg(rng)
        if rng.random() < 0.5:
            return Case(cls, seed, what, a, b)
        return Case(cls, seed, "reorder inside a {%clock, %clock_hi} region", a, pipelines=REORDERS,
                    region=("{%clock, %clock_hi}", "{%clock, %clock_hi}"))
    if cls == "wrap_offset":
        a, what = _wrap_offset(rng)
        return Case(cls, seed, what, a, pipelines=REORDERS)
    if cls == "misaligned":
        a, b, what = _misaligned(rng)
        return Case(cls, seed, what, a, b, block=1)
    if cls == "mixed_width":
        a, what = _mixed_width(rng)
        return Case(cls, seed, what, a, pipelines=("vec_ld",))
    if cls == "hint_before_def":
        a, what = _hint_before_def(rng)
        return Case(cls, seed, what, a, pipelines=_family(PREFETCH))
    if cls == "no_contract":
        a, b, what = _no_contract(rng)
        return Case(cls, seed, what, a, b, block=64, unchecked=True)
    if cls == "read_only_load":
        a, b, what = _read_only_load(rng)
        return Case(cls, seed, what, a, b, block=1, untrusted=True)
    if cls == "precision":
        a, b, what = _precision(rng)
        return Case(cls, seed, what, a, b, block=1, untrusted=True)
    raise ValueError(f"unknown class {cls!r}; known: {', '.join(CLASSES)}")


# -- oracles ------------------------------------------------------------------------------------------------

def _geometry(case: Case):
    from ptxopt.equivalence.interpret import Geometry

    # one CTA: the kernels index their windows by %tid.x only, so two CTAs would race on them
    # (the no_contract class reads %ctaid.x and needs two)
    return Geometry(grid=(2 if case.unchecked else 1, 1, 1), block=(case.block, 1, 1))


def _differs(case: Case, a, b) -> str | None:
    """What the interpreter says of the pair on a real launch, when not ``equal``
    (an ``equal`` that assumes noalias is ``inconclusive``: see :func:`_run_pair`)."""
    return _describe(_run_pair(case, a, b))


def _run_pair(case: Case, a, b):
    """The interpreter's check of the pair on a real launch: capped, like
    every check's, where ``b`` makes an assumption no launch here can show
    (``result.assumption``)."""
    from ptxopt.equivalence.interpret import verify

    return verify(a, b, "k", trials=2, geometry=_geometry(case))


def _describe(res) -> str | None:
    if res.status == "equal":
        return None
    mm = res.mismatch
    return (f"{res.status}: {mm.buffer}[{mm.index}] {mm.original} -> {mm.transformed}" if mm is not None
            else f"{res.status}: {res.error or ''}".strip())


def _check_untrusted(case: Case) -> list[Finding]:
    """A pair that differs on a GPU by construction: a ``proved`` or an
    ``equal`` (the interpreter's, on every default trial) is a finding."""
    from ptxopt.equivalence.interpret import verify
    from ptxopt.equivalence.prove import prove

    out = []
    r = prove(case.original, case.candidate)
    if r.verdict == Verdict.PROVED:
        out.append(Finding(case.cls, case.seed, "false proof", f"{case.what}: {r.reason}"))
    res = verify(case.original, case.candidate, "k", geometry=_geometry(case))
    if res.status == "equal":
        out.append(Finding(case.cls, case.seed, "false equal", f"{case.what}: {res.trials} launches"))
    return out


def _check_pair(case: Case) -> list[Finding]:
    if case.untrusted:
        return _check_untrusted(case)
    if case.unchecked:
        from ptxopt import parse
        from ptxopt.api import check_equivalence

        verdict, _, _, _ = check_equivalence(parse(case.original), parse(case.candidate))
        if verdict not in TRUSTED:
            return []
        why = _differs(case, case.original, case.candidate)
        return [Finding(case.cls, case.seed, f"trusted without a contract ({verdict})",
                        f"{case.what}; a real launch: {why}")] if why else []
    from ptxopt.equivalence.prove import prove

    r = prove(case.original, case.candidate)
    if r.verdict != Verdict.PROVED:
        return []
    why = _differs(case, case.original, case.candidate)
    return [Finding(case.cls, case.seed, "false proof", f"{case.what}; the interpreter: {why}")] if why else []


def _region_lines(text: str, marker: str) -> list[int]:
    return [k for k, line in enumerate(text.splitlines()) if marker in line]


def _memory_outside(text: str, marker: str) -> int:
    """Memory instructions outside the region between the first and last line holding ``marker``."""
    lines = text.splitlines()
    at = _region_lines(text, marker)
    if len(at) < 2:
        return -1
    mem = [k for k, line in enumerate(lines) if line.strip().startswith(("ld.global", "st.global"))
           and "%rd1" not in line and "%rd2" not in line]
    return sum(1 for k in mem if not at[0] < k < at[-1])


def _check_passes(case: Case) -> tuple[list[Finding], list[tuple[str, str]]]:
    from ptxopt import emit, parse
    from ptxopt.passes.passmanager import PassManager
    from ptxopt.equivalence.prove.hints import hints_only_legal
    from ptxopt.toolchain import PtxasError, compile_ptx

    from ptxopt.equivalence.observable import observable_form

    out: list[Finding] = []
    assumed: list[tuple[str, str]] = []
    base = emit(parse(case.original))
    observable = observable_form(parse(case.original))
    for p in case.pipelines:
        try:
            new = PassManager(p).run(parse(case.original)).module
        except Exception as e:  # noqa: BLE001 - a crashing pass is a finding
            out.append(Finding(case.cls, case.seed, f"{p} crashed", f"{type(e).__name__}: {e}"))
            continue
        text = emit(new)
        if text == base:
            continue
        if case.region is not None:
            before, after = _memory_outside(base, case.region[0]), _memory_outside(text, case.region[0])
            if after > before:
                out.append(Finding(case.cls, case.seed, f"{p} moved an access out of the timed region",
                                   f"{case.what}: {after - before} more memory instruction(s) outside it"))
                continue
        try:
            compile_ptx(text, "sm_89")
        except PtxasError as e:
            out.append(Finding(case.cls, case.seed, f"{p} output rejected by ptxas",
                               f"{case.what}: {str(e).splitlines()[0]}"))
            continue
        # the hint rule speaks only of changes in hints alone (the observable forms equal)
        why = hints_only_legal(parse(case.original), new) if observable_form(new) == observable else None
        if why:
            out.append(Finding(case.cls, case.seed, f"{p} inserted an ill-formed hint", f"{case.what}: {why}"))
            continue
        res = _run_pair(case, case.original, new)
        if res.assumption is not None:  # nothing differed, but the result is only as good as its assumption
            assumed.append((p, res.error))
            continue
        diff = _describe(res)
        if diff:
            out.append(Finding(case.cls, case.seed, f"{p} changed the result", f"{case.what}: {diff}"))
            from ptxopt.equivalence.prove import prove

            if prove(case.original, text).verdict == Verdict.PROVED:
                out.append(Finding(case.cls, case.seed, f"false proof of {p}'s result", f"{case.what}: {diff}"))
    return out, assumed


def check_case(case: Case) -> Result:
    """Run the case's oracle (see the module doc)."""
    if case.candidate is not None:
        return Result(case, _check_pair(case))
    return Result(case, *_check_passes(case))


def campaign(classes=CLASSES, seeds=range(10)) -> dict[str, list[Result]]:
    """Every class for every seed: ``{class: [Result, ...]}``."""
    return {c: [check_case(make_case(c, s)) for s in seeds] for c in classes}


__all__ = ["CLASSES", "PRECISION_FORMS", "READ_ONLY_FORMS", "Case", "Finding", "Result", "campaign", "check_case",
           "make_case"]
