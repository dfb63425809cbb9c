"""What the analyses need to know about an instruction beyond ``opcodes.py``.

``ptxopt.opcodes`` says whether an instruction loads, stores, branches...; it
has no notion of *purity*. The dependency DAG must be conservative: anything
not positively known to be a side-effect-free register computation is an
ordering point. So this module keeps the whitelist of pure opcodes (an
opcode missing from it only costs scheduling freedom, never correctness) and
the few memory facts ``opcodes.py`` does not cover (``ldmatrix``, ``wmma``
loads and stores, textures and surfaces, ``.param::entry`` style spaces,
ordered/volatile accesses, clock reads).

Every instruction gets exactly one :func:`role`:

``pure``        register in, register out, no side effects;
``collective``  warp-synchronous register exchange (``shfl``, ``vote``...):
                no memory effects, kept in relative order among themselves;
``load``        reads memory of one state space (:func:`mem_space`);
``store``       writes memory of one state space;
``order``       an ordering point: barriers, fences, atomics, async copies,
                calls, branches, ``ret``/``exit``, volatile or
                acquire/release accesses, clock reads, and every opcode this
                module does not know.
"""

from __future__ import annotations

from ptxopt import opcodes
from ptxopt.ir import Instruction, Reg

PURE_OPCODES = frozenset({
    # integer arithmetic
    "add", "sub", "mul", "mad", "mul24", "mad24", "sad", "div", "rem", "abs", "neg",
    "min", "max", "popc", "clz", "bfind", "fns", "brev", "bfe", "bfi", "bmsk", "szext",
    "dp4a", "dp2a", "addc", "subc", "madc",
    # floating point
    "fma", "rcp", "sqrt", "rsqrt", "sin", "cos", "lg2", "ex2", "tanh", "testp", "copysign",
    # comparison and selection
    "set", "setp", "selp", "slct",
    # logic and shift
    "and", "or", "xor", "not", "cnot", "lop3", "shf", "shl", "shr", "prmt",
    # data movement and conversion (no memory access)
    "mov", "cvt", "cvta", "isspacep", "mapa", "getctarank", "createpolicy", "istypep",
    # tensor-core arithmetic on registers
    "mma",
})

COLLECTIVE_OPCODES = frozenset({"shfl", "vote", "match", "redux", "activemask", "elect"})

# Loads/stores opcodes.py does not list (ldmatrix reads shared memory;
# wmma.load/wmma.store access memory, wmma.mma is register arithmetic).
EXTRA_LOADS = frozenset({"ldmatrix"})
TEXTURE_OPS = frozenset({"tex", "tld4", "suld", "sust"})

# Modifiers that give a load or store memory-model semantics beyond a plain
# weak access: such accesses are ordering points.
ORDERED_MEM_MODS = frozenset({"volatile", "relaxed", "acquire", "release", "mmio", "acq_rel", "sc"})

# Special registers whose value depends on *when* they are read: reading one
# is an ordering point (the cycle-count instrumentation relies on it).
VOLATILE_SREGS = frozenset(
    {"%clock", "%clock64", "%clock_hi", "%globaltimer", "%globaltimer_lo", "%globaltimer_hi"}
    | {f"%pm{i}" for i in range(8)} | {f"%pm{i}_64" for i in range(8)}
)

_SPACES = {"global", "shared", "local", "param", "const", "generic"}


def mem_space(ins: Instruction) -> str:
    """The state space a load or store accesses, one of ``global``,
    ``shared``, ``local``, ``param``, ``const``, ``generic``.

    ``shared::cta``/``shared::cluster`` -> shared, ``param::entry`` -> param;
    textures and surfaces live in global memory; no space -> generic.
    """
    if ins.opcode in TEXTURE_OPS:
        return "global"
    for m in ins.modifiers:
        base = m.split("::", 1)[0]
        if base in _SPACES:
            return base
        if base == "tex":
            return "global"
    return "generic"


def _reads_volatile_sreg(ins: Instruction) -> bool:
    for o in ins.operands:
        if type(o) is Reg and o.name in VOLATILE_SREGS:
            return True
    return False


def role(ins: Instruction) -> str:
    """``pure``, ``collective``, ``load``, ``store`` or ``order`` (see module doc)."""
    op = ins.opcode
    if op in PURE_OPCODES:
        if op == "mov" and _reads_volatile_sreg(ins):
            return "order"
        return "pure"
    if op in COLLECTIVE_OPCODES:
        return "collective"
    if op == "wmma":
        if "mma" in ins.modifiers:
            return "pure"
        if "load" in ins.modifiers:
            return "load"
        if "store" in ins.modifiers:
            return "store"
        return "order"
    is_ld = op in opcodes.LOADS or op in EXTRA_LOADS or op in opcodes.PREFETCHES
    is_st = op in opcodes.STORES
    if is_ld or is_st:
        if any(m in ORDERED_MEM_MODS for m in ins.modifiers):
            return "order"
        return "load" if is_ld else "store"
    return "order"


def access_bytes(ins: Instruction) -> int | None:
    """Bytes accessed by a load or store (vector width x element size), None
    when unknown (``ldmatrix``, prefetch, untyped)."""
    if ins.opcode not in ("ld", "ldu", "st"):
        return None
    t = opcodes.value_type(ins)
    if t is None:
        return None
    bits = opcodes.TYPE_BITS[t]
    return max(1, bits // 8) * opcodes.vector_width(ins)


# ---------------------------------------------------------------------------
# Categories for features (one instruction may count in several).
# ---------------------------------------------------------------------------

FLOAT_TYPES = frozenset({"f16", "f16x2", "bf16", "bf16x2", "tf32", "f32", "f64", "e4m3", "e5m2",
                         "e4m3x2", "e5m2x2"})
SFU_OPCODES = frozenset({"rcp", "sqrt", "rsqrt", "sin", "cos", "lg2", "ex2", "tanh"})
CONVERSION_OPCODES = frozenset({"cvt", "cvta"})
BRANCH_OPCODES = frozenset({"bra", "brx"})


def is_fma(ins: Instruction) -> bool:
    """``fma`` and floating-point ``mad`` (PTX defines ``mad.rn.f32`` as a fused
    multiply-add)."""
    if ins.opcode == "fma":
        return True
    return ins.opcode == "mad" and opcodes.value_type(ins) in FLOAT_TYPES


def is_float_op(ins: Instruction) -> bool:
    """An arithmetic instruction whose operation type is floating point
    (``setp.lt.f32`` compares floats; ``cvt.f32.s32`` is a conversion, not
    counted here)."""
    if ins.opcode not in PURE_OPCODES or ins.opcode in CONVERSION_OPCODES or ins.opcode == "mov":
        return False
    return opcodes.value_type(ins) in FLOAT_TYPES


def reads_special_reg(ins: Instruction) -> bool:
    for o in ins.operands:
        if type(o) is Reg and opcodes.is_special_reg(o.name):
            return True
    return False
