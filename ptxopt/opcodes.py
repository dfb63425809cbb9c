"""What PTX opcodes and modifiers mean, as data tables.

The IR and grammar are deliberately ignorant of the ISA: they accept any
``opcode.modifier...`` and print it back. Everything that needs to know what
an instruction *does* (analyses, passes, the interpreter) asks this module, so
the ISA knowledge lives in one place and an unknown opcode degrades to the
conservative answer (treated as an ordering point with one destination).
"""

from __future__ import annotations

from ptxopt.ir import Addr, Instruction, Neg, Pair, Reg, Vec

STATE_SPACES = frozenset(
    {".reg", ".sreg", ".const", ".global", ".local", ".param", ".shared", ".tex", ".generic"}
)

# Fundamental types -> width in bits (PTX ISA §5.2).
TYPE_BITS: dict[str, int] = {
    "pred": 1,
    "b8": 8, "b16": 16, "b32": 32, "b64": 64, "b128": 128,
    "u8": 8, "u16": 16, "u32": 32, "u64": 64,
    "s8": 8, "s16": 16, "s32": 32, "s64": 64,
    "f16": 16, "f16x2": 32, "bf16": 16, "bf16x2": 32, "tf32": 32,
    "f32": 32, "f64": 64,
    "e4m3": 8, "e5m2": 8, "e4m3x2": 16, "e5m2x2": 16,
}

VECTOR_WIDTH = {"v2": 2, "v4": 4, "v8": 8}

# Register classes used for pressure accounting, keyed by declared type.
REG_CLASS = {
    "pred": "pred",
    "b16": "b16", "u16": "b16", "s16": "b16", "f16": "b16", "bf16": "b16",
    "b32": "b32", "u32": "b32", "s32": "b32", "f32": "b32", "f16x2": "b32", "bf16x2": "b32",
    "b64": "b64", "u64": "b64", "s64": "b64", "f64": "b64",
    "b8": "b16", "u8": "b16", "s8": "b16", "b128": "b128",
}

# Memory-accessing opcodes and their role.
LOADS = frozenset({"ld", "ldu", "tex", "tld4", "suld"})
STORES = frozenset({"st", "sust", "stmatrix"})
ATOMICS = frozenset({"atom", "red", "atomic"})
PREFETCHES = frozenset({"prefetch", "prefetchu", "cp.async.bulk.prefetch"})
ASYNC_COPIES = frozenset({"cp"})

# Ordering points: nothing may be moved across them.
BARRIERS = frozenset({"bar", "barrier", "membar", "fence", "mbarrier", "griddepcontrol", "wgmma"})
CONTROL = frozenset({"bra", "brx", "call", "ret", "exit", "trap", "brkpt"})
TERMINATORS = frozenset({"bra", "brx", "ret", "exit", "trap"})

# Opcodes with no destination register operand.
NO_DEST = frozenset(
    {"st", "sust", "red", "bar", "barrier", "membar", "fence", "bra", "brx", "call", "ret",
     "exit", "trap", "brkpt", "prefetch", "prefetchu", "cp", "pmevent", "nanosleep",
     "discard", "applypriority", "stmatrix", "griddepcontrol", "elect", "setmaxnreg",
     "wgmma", "tcgen05", "cp.async"}
)

# Known cache operators, per direction (PTX ISA "Cache Operators").
LOAD_CACHE_OPS = ("ca", "cg", "cs", "lu", "cv")
STORE_CACHE_OPS = ("wb", "cg", "cs", "wt")

SPACE_MODS = frozenset({"global", "shared", "local", "param", "const", "generic", "tex"})

# Operand kinds that contain register reads when used as sources.
_REG_TYPES = (Reg, Neg, Pair, Vec, Addr)


def space_of(ins: Instruction) -> str | None:
    """The state space an instruction's address refers to (``global``...),
    ``generic`` when a memory opcode names none, None for non-memory ops."""
    for m in ins.modifiers:
        if m in SPACE_MODS:
            return m
        if m.startswith("shared::"):
            return "shared"
    if is_memory(ins):
        return "generic"
    return None


def is_load(ins: Instruction) -> bool:
    return ins.opcode in LOADS


def is_store(ins: Instruction) -> bool:
    return ins.opcode in STORES


def is_atomic(ins: Instruction) -> bool:
    return ins.opcode in ATOMICS


def is_memory(ins: Instruction) -> bool:
    op = ins.opcode
    return op in LOADS or op in STORES or op in ATOMICS or op == "cp" or op in PREFETCHES


def is_barrier(ins: Instruction) -> bool:
    return ins.opcode in BARRIERS


def is_control(ins: Instruction) -> bool:
    return ins.opcode in CONTROL


def vector_width(ins: Instruction) -> int:
    for m in ins.modifiers:
        w = VECTOR_WIDTH.get(m)
        if w:
            return w
    return 1


def value_type(ins: Instruction) -> str | None:
    """The last fundamental-type modifier (``ld.global.v2.f32`` -> ``f32``)."""
    for m in reversed(ins.modifiers):
        if m in TYPE_BITS:
            return m
    return None


def cache_op(ins: Instruction) -> str | None:
    ops = LOAD_CACHE_OPS if is_load(ins) else STORE_CACHE_OPS
    for m in ins.modifiers:
        if m in ops:
            return m
    return None


def dest_count(ins: Instruction) -> int:
    """How many leading operands are written (0 or 1; a vector or pair counts
    as one operand whose components are all written)."""
    op = ins.opcode
    if op in NO_DEST:
        return 0
    if op in ("atom",) or op in LOADS:
        return 1
    if not ins.operands:
        return 0
    return 1


def regs_in(operand) -> list[str]:
    """Every register name read by or written to through ``operand``."""
    t = type(operand)
    if t is Reg:
        return [operand.name]
    if t is Neg:
        return [operand.reg.name]
    if t is Pair:
        return [operand.first.name, operand.second.name]
    if t is Vec:
        out: list[str] = []
        for i in operand.items:
            out.extend(regs_in(i))
        return out
    if t is Addr:
        out = regs_in(operand.base)
        for e in operand.extra:
            out.extend(regs_in(e))
        return out
    return []


def defs_uses(ins: Instruction) -> tuple[list[str], list[str]]:
    """Registers written and read by ``ins`` (the guard predicate is a use).

    A store's address and data are uses; an atomic writes its first operand
    and reads the rest. Addresses are always uses, even in destination position.
    """
    ops = ins.operands
    n = dest_count(ins)
    defs: list[str] = []
    uses: list[str] = []
    if ins.guard:
        uses.append(ins.guard)
    for i, o in enumerate(ops):
        if i < n and type(o) is not Addr:
            defs.extend(r for r in regs_in(o) if not is_special_reg(r))
        else:
            uses.extend(regs_in(o))
    return defs, uses


def is_special_reg(name: str) -> bool:
    """Special registers (``%tid.x``, ``%clock64``) are read-only hardware state."""
    base = name.split(".", 1)[0]
    return base in SPECIAL_REGS


SPECIAL_REGS = frozenset(
    {"%tid", "%ntid", "%laneid", "%warpid", "%nwarpid", "%ctaid", "%nctaid", "%smid",
     "%nsmid", "%gridid", "%lanemask_eq", "%lanemask_le", "%lanemask_lt", "%lanemask_ge",
     "%lanemask_gt", "%clock", "%clock64", "%clock_hi", "%globaltimer", "%globaltimer_lo",
     "%globaltimer_hi", "%pm0", "%pm1", "%pm2", "%pm3", "%pm4", "%pm5", "%pm6", "%pm7",
     "%dynamic_smem_size", "%total_smem_size", "%aggr_smem_size", "%cluster_ctarank",
     "%cluster_nctarank", "%clusterid", "%nclusterid", "%cluster_ctaid", "%cluster_nctaid",
     "%is_explicit_cluster", "%current_graph_exec", "%reserved_smem_offset_begin",
     "%reserved_smem_offset_end", "%reserved_smem_offset_cap", "%reserved_smem_offset_0",
     "%reserved_smem_offset_1"}
    | {f"%envreg{i}" for i in range(32)}
)
