"""What PTX opcodes and modifiers mean, as data tables.

The IR and grammar are deliberately ignorant of the ISA: they accept any
``opcode.modifier...`` and print it back. Everything that needs to know what
an instruction *does* (analyses, passes, the interpreter) asks this module, so
the ISA knowledge lives in one place and an unknown opcode degrades to the
conservative answer (treated as an ordering point with one destination).
"""

from __future__ import annotations

from ptxopt.ptx.ir import Instruction
from ptxopt.ptx.ptxwords import STATE_SPACES, TYPE_BITS  # noqa: F401  (opcodes.STATE_SPACES, opcodes.TYPE_BITS)

VECTOR_WIDTH = {"v2": 2, "v4": 4, "v8": 8}

# Register classes used for pressure accounting, keyed by declared type.
REG_CLASS = {
    "pred": "pred",
    "b16": "b16", "u16": "b16", "s16": "b16", "f16": "b16", "bf16": "b16",
    "b32": "b32", "u32": "b32", "s32": "b32", "f32": "b32", "f16x2": "b32", "bf16x2": "b32",
    "b64": "b64", "u64": "b64", "s64": "b64", "f64": "b64",
    "b8": "b16", "u8": "b16", "s8": "b16", "b128": "b128",
}

# Memory-accessing opcodes and their role. (``wmma.load``/``wmma.store`` are
# memory accesses too; :func:`ptxopt.ptx.operand_facts.role` looks at their modifier.)
LOADS = frozenset({"ld", "ldu", "tex", "tld4", "suld", "ldmatrix"})
STORES = frozenset({"st", "sust", "stmatrix"})
ATOMICS = frozenset({"atom", "red", "atomic"})
PREFETCHES = frozenset({"prefetch", "prefetchu"})
ASYNC_COPIES = frozenset({"cp"})
TEXTURE_OPS = frozenset({"tex", "tld4", "suld", "sust"})

# Register in, register out, no side effects. Anything not listed here (or in
# COLLECTIVE_OPCODES / the memory sets) is an ordering point for scheduling:
# a missing opcode only costs freedom, never correctness.
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

# Opcodes that read or order memory but never write global memory (beyond
# the loads and prefetches): barriers and fences, the mbarrier object (shared
# memory by definition), control flow, timers and events. Anything else that
# is not pure, not a collective, not a load and not a memory access of a
# space other than .global/generic is treated as a possible global write by
# the read-only analysis (ptxopt.analysis.readonly): an opcode it does not
# know costs an .nc rewrite, never correctness.
NO_GLOBAL_WRITE_OPCODES = frozenset({
    "bar", "barrier", "membar", "fence", "mbarrier", "griddepcontrol", "bra", "brx", "ret", "exit", "trap",
    "brkpt", "nanosleep", "pmevent", "setmaxnreg", "wgmma",
})

# Warp-synchronous register exchange: no memory effects, but kept in order
# among themselves.
COLLECTIVE_OPCODES = frozenset({"shfl", "vote", "match", "redux", "activemask", "elect"})

# Warp-wide reads of shared memory whose ``.sync.aligned`` form every thread of
# the warp executes as *the same instruction* (PTX ISA, "Warp-level matrix load
# instruction: ldmatrix": "all threads in the warp must execute the same
# ldmatrix instruction"; in conditional code only where the condition is
# warp-uniform, otherwise undefined). Unlike shfl.sync (which pairs with *a*
# shfl.sync of the same mask, so divergent paths' shuffles pair in program
# order), such a read cannot pair with another instruction: its result is a
# function of the row addresses every lane computes from the same code and of
# shared memory, not of its position among other collectives. It orders no
# memory (only barriers and fences do).
WARP_ALIGNED_READS = frozenset({"ldmatrix"})

# Memory-model qualifiers that make an access more than a plain weak one.
ORDERED_MEM_MODS = frozenset({"volatile", "relaxed", "acquire", "release", "mmio", "acq_rel", "sc"})

FLOAT_TYPES = frozenset({"f16", "f16x2", "bf16", "bf16x2", "tf32", "f32", "f64", "e4m3", "e5m2",
                         "e4m3x2", "e5m2x2"})
SFU_OPCODES = frozenset({"rcp", "sqrt", "rsqrt", "sin", "cos", "lg2", "ex2", "tanh"})
CONVERSION_OPCODES = frozenset({"cvt", "cvta"})
BRANCH_OPCODES = frozenset({"bra", "brx"})

# Ordering points: nothing may be moved across them.
BARRIERS = frozenset({"bar", "barrier", "membar", "fence", "mbarrier", "griddepcontrol", "wgmma"})
CONTROL = frozenset({"bra", "brx", "call", "ret", "exit", "trap", "brkpt"})
TERMINATORS = frozenset({"bra", "brx", "ret", "exit", "trap"})

# Opcodes with no destination register operand (PTX ISA, each opcode's
# syntax). Not here, though they look alike: ``elect.sync d|p, mask`` writes
# a register and a predicate; ``bar.red``/``barrier.red`` write their first
# operand (:data:`DEST_IF_MODIFIER`); ``wgmma.mma_async`` writes (and reads)
# its accumulator and ``tcgen05.ld`` writes registers (``DEST_IF_MODIFIER``);
# ``stacksave``/``alloca`` write one. ``stackrestore a`` and
# ``tcgen05.dealloc taddr, n`` only *read* a register in first position.
NO_DEST = frozenset(
    {"st", "sust", "sured", "red", "membar", "fence", "bra", "brx", "call", "ret",
     "exit", "trap", "brkpt", "prefetch", "prefetchu", "cp", "pmevent", "nanosleep",
     "discard", "applypriority", "stmatrix", "griddepcontrol", "setmaxnreg",
     "stackrestore", "cp.async"}
)

# Opcodes whose first operand is a destination only in some forms: the
# modifier that makes it one. Every other form writes nothing.
DEST_IF_MODIFIER = {
    "bar": "red",          # bar.red.popc.u32 d, a, p  /  bar.sync a
    "barrier": "red",      # barrier.red.and.pred p, a, q  /  barrier.sync a
    "wgmma": "mma_async",  # wgmma.mma_async... d, a-desc, ...  /  wgmma.fence
    "tcgen05": "ld",       # tcgen05.ld... r, [taddr]  /  tcgen05.dealloc taddr, n
}

# Destinations that are read too: ``wgmma.mma_async`` accumulates into d
# (``d = a*b + d`` unless its scale-d operand is false at run time).
ACCUMULATES_IN_PLACE = frozenset({"wgmma"})

# The carry flag (CC.CF), implicit state of the extended-precision integer
# instructions (PTX ISA "Extended-Precision Integer Arithmetic"): ``add.cc``,
# ``sub.cc``, ``mad.cc`` and ``addc.cc``/``subc.cc``/``madc.cc`` write it
# (the ``.cc`` modifier); ``addc``/``subc``/``madc`` read it. It is modelled
# as a register with a name no PTX register can have, so the DAG, liveness
# and every pass see the dependency: a scheduler must not separate
# ``add.cc`` from its ``addc`` nor put another carry writer between them.
CARRY_FLAG = "%cc.cf"
CARRY_IN = frozenset({"addc", "subc", "madc"})
CARRY_OUT_MODIFIER = "cc"
# Implicit state modelled as registers: no declaration, no register class,
# not counted by register pressure.
IMPLICIT_REGS = frozenset({CARRY_FLAG})

# Known cache operators, per direction (PTX ISA "Cache Operators"), and the
# ones ``ld.global.nc`` accepts (PTX ISA "ld.global.nc").
LOAD_CACHE_OPS = ("ca", "cg", "cs", "lu", "cv")
STORE_CACHE_OPS = ("wb", "cg", "cs", "wt")
NC_LOAD_CACHE_OPS = ("ca", "cg", "cs")
# ``ld.global.nc`` (PTX ISA "Data Movement and Conversion Instructions:
# ld.global.nc"): ``ld.global{.cop}.nc{.level::cache_hint}{.level::prefetch_size}{.vec}.type``
# or ``ld.global.nc{.L1::...}{.L2::...}{.level::cache_hint}{.level::prefetch_size}{.vec}.type``:
# weak only (no .volatile/.relaxed/.acquire/.mmio form), .global only (no
# generic address), no ``.unified``, ``.cop`` one of NC_LOAD_CACHE_OPS, ``.vec`` one of
# ``.v2 .v4 .v8``, and these element types (sm_32 or later, PTX ISA 3.1):
NC_LOAD_TYPES = frozenset({"b8", "b16", "b32", "b64", "b128", "u8", "u16", "u32", "u64",
                           "s8", "s16", "s32", "s64", "f32", "f64"})
NC_LOAD_EXCLUDED_MODS = frozenset({"unified"})
CACHE_OPERATORS = frozenset(LOAD_CACHE_OPS + STORE_CACHE_OPS)

# Loads on the read-only / non-coherent path, one row per form: opcode -> the
# modifier that makes it one (None: every form). Each promises that the bytes
# it reads are not written while the kernel runs (PTX ISA "ld.global.nc":
# "the data ... is read-only for the lifetime of the kernel"; "ldu": "load
# read-only data from an address that is common across threads in the warp";
# "tex"/"tld4": texture memory, read-only in a kernel), so a store that may
# alias them makes the read stale on a GPU while one coherent memory (the
# interpreter, the prover) sees the new value. The assumption cap
# (ptxopt.equivalence.assumptions), the SMT encoding's read-only memory and
# the interpreter's .nc footprints all read this table.
READ_ONLY_LOADS = {"ld": "nc", "ldu": None, "tex": None, "tld4": None}


def is_read_only_load(ins: Instruction) -> bool:
    """A load on the read-only path (:data:`READ_ONLY_LOADS`): ``ld.global.nc``,
    ``ldu``, a texture fetch."""
    op = ins.opcode
    if op not in READ_ONLY_LOADS:
        return False
    need = READ_ONLY_LOADS[op]
    return need is None or need in ins.modifiers


# Float precision (PTX ISA, "Floating-Point Instructions" and "Half
# Precision Floating-Point Instructions", each instruction's Description and
# Notes). Modifiers that choose *which* function a float instruction
# computes: the rounding of a correctly rounded result (.rn .rz .rm .rp, .rna
# and the integer roundings of cvt), subnormal flushing (.ftz; ``.noftz``
# keeps them), clamping to [0, 1] (.sat, .satfinite), and the approximate
# forms (.approx, div's .full). A float instruction without a rounding
# modifier is not the .rn one either: ptxas may contract a ``mul``/``add``
# without one into an ``fma`` ("mul/add ... with no rounding modifier may be
# optimized aggressively by the code generator"), so dropping or adding
# ``.rn`` changes the result bits a GPU computes.
PRECISION_MODIFIERS = frozenset({"approx", "full", "rn", "rz", "rm", "rp", "rna", "rni", "rzi", "rmi", "rpi",
                                 "ftz", "noftz", "sat", "satfinite"})
# Float instructions whose result depends on those modifiers (cvt only where a
# float type is involved: ``cvt.rn.f32.s32``, ``cvt.rzi.s32.f32``).
PRECISION_OPCODES = frozenset({"add", "sub", "mul", "fma", "mad", "div", "rcp", "sqrt", "rsqrt", "ex2", "lg2",
                               "sin", "cos", "tanh", "min", "max", "abs", "neg", "cvt", "setp", "set"})
# The approximate forms: the manual states an error bound, not the bits, which
# are the special function unit's (they may differ between GPU generations).
# (opcode, the modifier that selects the form) -> the bound the manual states
# (quoted from memory of the manual's Notes, for reports; no check here reads
# the number: every approximate form is modelled within one ulp and a change
# of form is never trusted, whatever its bound).
# Every other form of these opcodes (and every other float instruction) is
# exact: IEEE 754 correctly rounded in its rounding mode, with .ftz and .sat
# applied to inputs and result as documented, which the interpreter
# computes bit for bit (ptxopt.interp.fp).
APPROXIMATE_FLOAT_OPS = {
    ("rcp", "approx"): "f32: at most 1 ulp over the full range; .ftz.f64: the hardware's raw approximation",
    ("sqrt", "approx"): "f32: relative error within about 2^-23",
    ("rsqrt", "approx"): "f32: relative error within about 2^-22.9; .ftz.f64: the hardware's raw approximation",
    ("ex2", "approx"): "f32: within about 2 ulp; f16/bf16: relative error within about 2^-9.9",
    ("lg2", "approx"): "f32: absolute error within about 2^-22 near 1, relative elsewhere",
    ("sin", "approx"): "f32: absolute error within about 2^-20.9 in [-pi, pi]",
    ("cos", "approx"): "f32: absolute error within about 2^-20.9 in [-pi, pi]",
    ("tanh", "approx"): "f32: relative error within about 2^-11",
    ("div", "approx"): "f32: at most 2 ulp for |b| in [2^-126, 2^126]",
    ("div", "full"): "f32: at most 2 ulp over the full range",
}


def precision_form(ins: Instruction) -> tuple | None:
    """``(opcode, types, precision modifiers)`` of a float instruction whose
    result depends on them (:data:`PRECISION_OPCODES` with a float type), in
    a canonical order; None for every other instruction. Two instructions of
    one form compute the same function (the approximate ones too: the same
    hardware unit on the same inputs)."""
    if ins.opcode not in PRECISION_OPCODES:
        return None
    types = tuple(m for m in ins.modifiers if m in TYPE_BITS)
    if not any(t in FLOAT_TYPES for t in types):
        return None
    return ins.opcode, types, tuple(sorted(m for m in ins.modifiers if m in PRECISION_MODIFIERS))


def is_approximate(ins: Instruction) -> bool:
    """A float instruction whose result bits the manual does not define
    (:data:`APPROXIMATE_FLOAT_OPS`)."""
    op = ins.opcode
    return any((op, m) in APPROXIMATE_FLOAT_OPS for m in ins.modifiers) and precision_form(ins) is not None

# Cache-policy qualifiers that change performance only and take no operand
# (PTX ISA ld/st/prefetch: eviction priorities, L2 prefetch sizes). Not
# ``.L2::cache_hint``: it comes with a cache-policy operand, so dropping the
# qualifier alone would not print a valid instruction.
HINT_PREFIXES = ("L1::evict_", "L1::no_allocate", "L2::evict_", "L2::64B", "L2::128B", "L2::256B")
# Opcodes that carry cache operators and hint qualifiers.
CACHE_ANNOTATED = frozenset({"ld", "ldu", "st"})

# Modifiers the interpreter may ignore on a memory access: state spaces and
# memory-model / caching qualifiers (PTX ISA ld, st, atom: .space, .sem,
# .scope, .cop, .nc, vector widths). They do not change one thread's result.
SPACE_MODIFIERS = frozenset({"global", "shared", "local", "param", "const", "shared::cta",
                             "shared::cluster", "param::entry", "param::func",
                             "global::evict_last"})
MEMORY_QUALIFIERS = frozenset({"ca", "cg", "cs", "lu", "cv", "wb", "wt", "nc", "volatile",
                               "relaxed", "acquire", "release", "weak", "mmio", "cta", "gpu",
                               "sys", "cluster", "v2", "v4", "v8", "unified"})
# atom/red operations (PTX ISA atom: .op).
ATOMIC_OPERATIONS = frozenset({"and", "or", "xor", "cas", "exch", "add", "inc", "dec", "min", "max"})

# Performance directives of an entry: they bound resources, not results.
PERF_ONLY_DIRECTIVES = frozenset({"maxnreg", "minnctapersm", "maxnctapersm"})

# The entry performance-tuning directives (PTX ISA "Performance-Tuning
# Directives", 11.4.1-11.4.5): name -> (the PTX ISA version that introduced
# it, the most arguments it takes). All are "supported on all target
# architectures" and may appear only between an ``.entry`` and its body.
# ``.maxntid nx{, ny{, nz}}`` bounds the *product* of the extents (the ISA:
# "does not guarantee that the limit in any particular dimension is not
# exceeded"); a launch with more threads fails. ``.reqntid`` fixes every
# extent: a launch whose extents differ fails. ``.maxnctapersm`` is
# deprecated since 2.0 (renamed ``.minnctapersm``; ptxas: "not supported as of
# PTX version 2.1"). The versions are checked against ptxas in tests/ptx/test_isa_facts.py.
ENTRY_TUNING_DIRECTIVES: dict[str, tuple[tuple[int, int], int]] = {
    "maxnreg": ((1, 3), 1),
    "maxntid": ((1, 3), 3),
    "reqntid": ((2, 1), 3),
    "minnctapersm": ((2, 0), 1),
    "maxnctapersm": ((1, 3), 1),
}
# "The .reqntid directive cannot be used in conjunction with the .maxntid
# directive" (ptxas: "Conflicting directives: .maxntid and .reqntid cannot
# both be specified", an error).
EXCLUSIVE_TUNING_DIRECTIVES = frozenset({"maxntid", "reqntid"})
# "Optimizations based on .minnctapersm need either .maxntid or .reqntid";
# without one ptxas warns and ignores it (PTX ISA 2.1 and later).
MINNCTAPERSM_NEEDS = ("maxntid", "reqntid")


def is_eviction_priority(m: str) -> bool:
    """``.L1::evict_*``, ``.L1::no_allocate``, ``.L2::evict_*``: a syntax form
    of ld/st that excludes a cache operator."""
    return m.startswith(("L1::evict", "L2::evict")) or m == "L1::no_allocate"


def is_perf_hint(m: str) -> bool:
    """A modifier that changes only how memory is cached, never a value: a
    cache operator or a cache-policy qualifier."""
    return m in CACHE_OPERATORS or m.startswith(HINT_PREFIXES)

_SPACES = frozenset({"global", "shared", "local", "param", "const", "generic"})


def mem_space(ins: Instruction) -> str:
    """The state space a memory instruction accesses: ``global``, ``shared``,
    ``local``, ``param``, ``const`` or ``generic`` (no space named).

    ``shared::cta``/``shared::cluster`` -> shared, ``param::entry`` -> param;
    textures and surfaces live in global memory. For ``cp`` (async copies) this
    is the first space named, the destination.
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


def space_of(ins: Instruction) -> str | None:
    """:func:`mem_space` for memory instructions, None for everything else
    (``cvta.to.global`` names a space but accesses no memory)."""
    return mem_space(ins) if is_memory(ins) else None


def access_bytes(ins: Instruction) -> int | None:
    """Bytes accessed by ``ld``/``ldu``/``st`` (vector width x element size);
    None when unknown (``ldmatrix``, prefetch, untyped)."""
    if ins.opcode not in ("ld", "ldu", "st"):
        return None
    t = value_type(ins)
    if t is None:
        return None
    return max(1, TYPE_BITS[t] // 8) * vector_width(ins)


def is_warp_aligned(ins: Instruction) -> bool:
    """``.sync.aligned``: every thread of the warp executes this very instruction
    (PTX ISA: ``ldmatrix``, ``mma``; see :data:`WARP_ALIGNED_READS`)."""
    return "sync" in ins.modifiers and "aligned" in ins.modifiers


def is_load(ins: Instruction) -> bool:
    return ins.opcode in LOADS


def is_store(ins: Instruction) -> bool:
    return ins.opcode in STORES


def is_atomic(ins: Instruction) -> bool:
    return ins.opcode in ATOMICS


def is_memory(ins: Instruction) -> bool:
    op = ins.opcode
    if op == "wmma":
        return "load" in ins.modifiers or "store" in ins.modifiers
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


def dest_count(ins: Instruction) -> int:
    """How many leading operands are written (0 or 1; a vector or pair counts
    as one operand whose components are all written). An address operand in
    first position is never a destination (``mbarrier.init [a], n``)."""
    op = ins.opcode
    if op in NO_DEST:
        return 0
    need = DEST_IF_MODIFIER.get(op)
    if need is not None and need not in ins.modifiers:
        return 0
    if not ins.operands:
        return 0
    return 1


def writes_carry(ins: Instruction) -> bool:
    """Writes the carry flag (the ``.cc`` forms of :data:`_CARRY_WRITERS`)."""
    return ins.opcode in _CARRY_WRITERS and CARRY_OUT_MODIFIER in ins.modifiers


def touches_carry(ins: Instruction) -> bool:
    """Reads or writes the carry flag (see :data:`CARRY_FLAG`)."""
    return ins.opcode in CARRY_IN or (ins.opcode in _CARRY_WRITERS
                                      and CARRY_OUT_MODIFIER in ins.modifiers)


_CARRY_WRITERS = frozenset({"add", "sub", "mad", "addc", "subc", "madc"})


def is_special_reg(name: str) -> bool:
    """Special registers (``%tid.x``, ``%clock64``) are read-only hardware state."""
    v = _SPECIAL_CACHE.get(name)
    if v is None:
        v = _SPECIAL_CACHE[name] = name.split(".", 1)[0] in SPECIAL_REGS
    return v


_SPECIAL_CACHE: dict[str, bool] = {}


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
    | {f"%pm{i}_64" for i in range(8)}
)

VOLATILE_SREGS = frozenset(
    {"%clock", "%clock64", "%clock_hi", "%globaltimer", "%globaltimer_lo", "%globaltimer_hi"}
    | {f"%pm{i}" for i in range(8)} | {f"%pm{i}_64" for i in range(8)}
)

# Special registers that are not counters but may still change while a
# thread runs (PTX ISA "Special Registers": %warpid and %smid return the
# location of a thread when read, which "may change during execution, e.g.,
# due to rescheduling of threads following preemption"). Two reads need not
# agree, so a value proof must not treat them as launch constants.
RELOCATABLE_SREGS = frozenset({"%warpid", "%smid"})

# Special registers two reads of which may differ: a read is an ordering
# point for every scheduler and a fresh value for the prover, wherever it
# appears in the operands (``{%clock, %clock_hi}`` included).
IMPURE_SREGS = VOLATILE_SREGS | RELOCATABLE_SREGS

# The width in bits the walker normalises address offsets to, per state
# space. .shared and .local addresses are commonly held in 32-bit registers
# (PTX ISA: ld/st/cvta take .u32 state-space addresses; cvta's ".size =
# {.u32, .u64}"), and a 32-bit address wraps at 2**32, so [%r1+-4] and
# [%r1+4294967292] are one location (the interpreter computes them so too);
# the other spaces use 64-bit addresses under ``.address_size 64``. Adjacency
# claims (vectorizer contiguity, .global only) hold modulo 2**64, hence modulo
# 2**32 too; the alias rules decide disjointness modulo 2**32
# (``operand_facts.ALIAS_BITS``), sound for either width, so a 64-bit base in
# .shared cannot mislead them.
ADDRESS_BITS = {"shared": 32, "local": 32, "global": 64, "generic": 64, "param": 64, "const": 64}

# Instructions after which the carry flag holds no defined value (PTX ISA
# "Extended-Precision Integer Arithmetic Instructions": the condition code
# register "is not preserved across calls").
CARRY_CLOBBERS = frozenset({"call"})

# Special registers that read the same in every thread of a block (PTX ISA
# "Special Registers": the block and grid shape, the block's own and its
# cluster's coordinates, the grid id, the shared-memory sizes, the
# environment registers). Everything else -- %tid, %laneid, %warpid, the
# lane masks, clocks and counters, %smid -- may differ between threads, so a
# value derived from it is not block-uniform (ptxopt.analysis.uniform).
BLOCK_UNIFORM_SREGS = frozenset(
    {"%ntid", "%ctaid", "%nctaid", "%gridid", "%nsmid", "%nwarpid", "%clusterid", "%nclusterid",
     "%cluster_ctaid", "%cluster_nctaid", "%cluster_ctarank", "%cluster_nctarank", "%is_explicit_cluster",
     "%dynamic_smem_size", "%total_smem_size", "%aggr_smem_size"}
    | {f"%envreg{i}" for i in range(32)}
)


def is_block_uniform_sreg(name: str) -> bool:
    """``%ctaid.x`` yes, ``%tid.x`` no (see :data:`BLOCK_UNIFORM_SREGS`)."""
    return name.split(".", 1)[0] in BLOCK_UNIFORM_SREGS
