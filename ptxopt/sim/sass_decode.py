"""Pre-decode a :class:`~ptxopt.toolchain.SassListing` for the issue model.

Everything the hot loop in :mod:`ptxopt.sim.model` needs is computed once
here and stored in flat tuples, so the walk itself is a plain Python loop
over integers:

* the scheduling bits (stall, wait mask, read/write barrier) from the
  already decoded :class:`~ptxopt.toolchain.control_bits.Control`;
* the *latency class* of a variable-latency producer (global load that may
  hit L1, L1-bypassing global load, local, shared, special register ...),
  which the architecture's :class:`~ptxopt.sim.latency.ArchLatencies` turns
  into cycles;
* for global memory operations, the address as (registers, byte offset,
  access size), so the model can tell which 32-byte sectors an access
  touches;
* destination registers (only those ever used in an address), so a
  rewritten base register starts a new address;
* control flow: branch/call targets resolved to flat instruction indices,
  guards, ``DEPBAR`` operands, and the loops (back edges) the static
  trip-count fallback needs.

Cache operators in SASS (what ptxas 12.9/13.x emits for ``ld.global.<op>``
and ``st.global.<op>`` on sm_80/sm_89/sm_90, checked by compiling one load
of each kind; the test suite re-checks the load side)::

    PTX load              SASS                    model
    ld.global (default)   LDG.E                   L1-cacheable
    ld.global.ca          LDG.E.STRONG.SM         L1-cacheable (SM scope is coherent at L1)
    ld.global.cg          LDG.E.STRONG.GPU        L2 (bypasses L1, does not allocate)
    ld.global.cs          LDG.E.EF                L1-cacheable (evict-first hint)
    ld.global.cv          LDG.E.STRONG.SYS        L2 (bypasses L1, does not allocate)
    ld.global.lu          LDG.E.LU                L1-cacheable (last-use hint)
    ld.global.nc          LDG.E.CONSTANT          L1-cacheable (read-only path shares L1)
    ld.global.nc.L1::no_allocate  LDG.E.NA.CONSTANT  L1 if present, else L2 without allocating
    ld.global.L1::evict_last      LDG.E.EL        L1-cacheable
    ld.volatile.global    LDG.E.STRONG.SYS        L2
    ld.relaxed.gpu.global LDG.E.STRONG.GPU        L2
    ld.acquire.gpu.global LDG.E.STRONG.GPU + CCTL.IVALL   L2, then L1 invalidated

    st.global / .wb / .wt / .cs / .cg  ->  STG.E / .STRONG.SM / .STRONG.SYS / .EF / .STRONG.GPU
    (stores only matter through their read barrier; see the model doc)
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ptxopt.toolchain import SassInstruction, SassListing
from ptxopt.toolchain.tables import CONTROL_SHIFT_IN_HIGH_WORD, NO_BARRIER

# --- latency classes of barrier-setting producers ---------------------------
K_FIXED = 0  # no variable latency (only matters if it sets a barrier anyway -> OTHER)
K_GLOBAL = 1  # L1-cacheable global load: sector model
K_GLOBAL_L2 = 2  # L1-bypassing global load (.cg/.cv/volatile/strong.gpu)
K_GLOBAL_NA = 3  # no-allocate global load: L1 hit if present, else L2 without allocating
K_LOCAL = 4
K_SHARED = 5
K_CONST = 6
K_SREG = 7
K_UMOV = 8
K_MUFU = 9
K_SHFL = 10
K_CONV = 11
K_FP64 = 12
K_TENSOR = 13
K_ATOMG = 14
K_ATOMS = 15
K_OTHER = 16
K_LDGDEPBAR = 17  # releases when the LDGSTS group it commits has landed

CLASS_NAMES = {
    K_FIXED: "fixed", K_GLOBAL: "global", K_GLOBAL_L2: "L2", K_GLOBAL_NA: "global.na",
    K_LOCAL: "local", K_SHARED: "shared", K_CONST: "constant", K_SREG: "special-reg",
    K_UMOV: "R2UR", K_MUFU: "MUFU", K_SHFL: "shuffle", K_CONV: "convert", K_FP64: "fp64",
    K_TENSOR: "tensor", K_ATOMG: "atomic", K_ATOMS: "shared-atomic", K_OTHER: "other",
    K_LDGDEPBAR: "LDGSTS group",
}

# --- memory side effects that are not barrier producers ----------------------
M_NONE = 0
M_LDGSTS = 1  # async global->shared copy: completion joins the open LDGSTS group
M_LDGSTS_L2 = 2  # the same with .BYPASS (L1 not allocated)
M_PREFETCH_L1 = 3  # CCTL.E.PF1: start filling the 128-byte line into L1
M_INVALIDATE_L1 = 4  # CCTL.IVALL: drop everything from L1

# --- value numbering of address registers ------------------------------------
# An address is identified by the *values* of its registers, not their names:
# a base address copied to another register, or spilled and reloaded, still
# names the same sectors.  Each op carries pairs; see ``decode``.
V_FRESH = 0  # (reg, ...): each gets a new value
V_CONST = 1  # ((reg, constant text), ...): c[bank][offset] or an immediate
V_COPY = 2  # ((reg, source reg), ...)
V_LOAD_SLOT = 3  # ((reg, stack offset), ...): LDL from [R1+offset]
V_STORE_SLOT = 4  # ((stack offset, source reg), ...): STL to [R1+offset]

# --- control flow ------------------------------------------------------------
C_NONE = 0
C_BRA = 1
C_EXIT = 2
C_CALL = 3
C_RET = 4
C_STOP = 5  # indirect branch (BRX/JMX): the walk cannot follow it
C_DIV = 6  # BRA.DIV: taken only if the warp is diverged; a single converged warp never is

_TARGET_RE = re.compile(r"`\(([^)]+)\)")
_BRACKET_RE = re.compile(r"\[([^\[\]]*)\]")
_ADDR_TOKEN_RE = re.compile(r"([+-]?)\s*(?:(URZ|UR\d+|RZ|R\d+)(?:\.[A-Z0-9]+)*|(0x[0-9a-fA-F]+|\d+))")
_DEPBAR_RE = re.compile(r"SB(\d)\s*,\s*(0x[0-9a-fA-F]+|\d+)(?:\s*,\s*\{([^}]*)\})?")
_REG_RE = re.compile(r"^(U?R)(\d+)$")
_ANNOTATION_RE = re.compile(r"\s*\(\*.*?\*\)")
_PRED_OPERAND_RE = re.compile(r"^!?U?P(?:T|\d+)$")
_WAIT_TUPLES = tuple(tuple(b for b in range(6) if mask >> b & 1) for mask in range(64))
_MEMORY_OPS = frozenset({"LDG", "LD", "LDGSTS", "CCTL"})
_VALUE_OPS = frozenset({"MOV", "IMAD", "LDC", "ULDC", "R2UR", "UMOV", "LDL", "STL"})
_CONST_OPERAND_RE = re.compile(r"^(c\[0x[0-9a-f]+\]\[0x[0-9a-f]+\]|-?0x[0-9a-fA-F]+|-?\d+)$")
_CONTROL_OPS = frozenset({"BRA", "JMP", "BRX", "JMX", "EXIT", "KILL", "CALL", "RET", "DEPBAR"})

_SIZE_BY_MODIFIER = {"U8": 1, "S8": 1, "U16": 2, "S16": 2, "64": 8, "128": 16}
_FP64_OPS = frozenset({"DADD", "DMUL", "DFMA", "DSETP", "DMNMX", "DMMA"})
_CONV_OPS = frozenset({"I2F", "F2I", "F2F", "FRND", "I2I", "I2FP", "F2IP"})
_TENSOR_OPS = frozenset({"HMMA", "IMMA", "BMMA", "DMMA", "HGMMA", "IGMMA", "QGMMA", "BGMMA"})
_SHFL_OPS = frozenset({"SHFL", "MATCH", "REDUX"})
_NO_GPR_DEST = frozenset({
    "STG", "STS", "STL", "ST", "RED", "BAR", "BRA", "BRX", "JMP", "JMX", "EXIT", "CALL", "RET", "NOP",
    "MEMBAR", "ERRBAR", "CCTL", "DEPBAR", "LDGDEPBAR", "LDGSTS", "WARPSYNC", "YIELD", "BSSY", "BSYNC",
    "BREAK", "KILL", "BPT", "NANOSLEEP", "CCTLL", "FENCE",
})


@dataclass(frozen=True)
class Program:
    """A listing flattened for the walk: parallel tuples indexed by flat instruction index."""

    arch: str
    kernel: str
    start: int  # flat index of the kernel's first instruction
    instructions: tuple[SassInstruction, ...]
    stall: tuple[int, ...]  # max(stall, 1): a warp issues at most one instruction per cycle
    wait: tuple[tuple[int, ...], ...]  # barriers waited on before issue
    wbar: tuple[int, ...]  # write barrier or -1
    rbar: tuple[int, ...]  # read barrier or -1
    kind: tuple[int, ...]  # K_* latency class of the write-barrier producer
    mem: tuple[int, ...]  # M_* side effect
    addr: tuple[tuple | None, ...]  # (registers, offset, size) of global accesses
    values: tuple[tuple | None, ...]  # (V_* op, pairs): how it changes the value ids of address registers
    never: tuple[bool, ...]  # guard is !PT: issues but does nothing
    ctrl: tuple[int, ...]  # C_* control-flow kind
    target: tuple[int, ...]  # branch/call target (flat index) or -1
    conditional: tuple[bool, ...]  # a guarded (data-dependent) branch / exit / call
    depbar: tuple[tuple[int, int, tuple[int, ...]] | None, ...]  # (SB, N, extra SBs) of DEPBAR.LE
    loop_of_exit: tuple[int, ...]  # for a loop-exit branch: flat index of the loop's back edge, else -1
    back_edges: tuple[int, ...]  # flat indices of loop back edges (target dominates the branch), listing order
    kernel_size: int  # static instruction count of the kernel's code section
    unresolved: tuple[str, ...] = field(default=())  # targets that could not be resolved
    #: per back edge (same order): the flat indices of its natural loop's body, header and branch included
    loop_body: tuple[frozenset[int], ...] = field(default=())

    def __len__(self) -> int:
        return len(self.instructions)

    def key(self, index: int) -> tuple[str, int]:
        """(code section, byte offset) of a flat index: the trip-count key of a branch."""
        ins = self.instructions[index]
        return (ins.function, ins.offset)


def _access_size(modifiers: tuple[str, ...]) -> int:
    for m in modifiers:
        if m in _SIZE_BY_MODIFIER:
            return _SIZE_BY_MODIFIER[m]
    return 4


def _parse_address(operands: str) -> tuple[tuple[str, ...], int] | None:
    """Registers and immediate offset of the last ``[...]`` operand (the address)."""
    groups = _BRACKET_RE.findall(operands)
    if not groups:
        return None
    regs: list[str] = []
    offset = 0
    for sign, reg, imm in _ADDR_TOKEN_RE.findall(groups[-1]):
        if reg:
            if reg not in ("RZ", "URZ"):
                regs.append(reg)
        elif imm:
            value = int(imm, 16) if imm.startswith("0x") else int(imm)
            offset += -value if sign == "-" else value
    return tuple(regs), offset


def _dest_registers(base: str, mods: tuple[str, ...], operands: str) -> tuple[str, ...]:
    """The GPR/UR registers an instruction writes (best effort, by operand position)."""
    head = operands.split(",", 2)
    first = head[0].strip()
    if first[:1] in "P!" and _PRED_OPERAND_RE.match(first):
        if len(head) < 2:
            return ()
        first = head[1].strip()  # SHFL/ATOMG/LOP3 ... may write a predicate first
    m = _REG_RE.match(first)
    if m is None:
        return ()
    prefix, number = m.group(1), int(m.group(2))
    if (prefix == "R" and number == 255) or (prefix == "UR" and number == 63):
        return ()  # RZ/URZ printed by number
    width = 1
    if "128" in mods:
        width = 4
    elif "64" in mods or (base == "IMAD" and "WIDE" in mods) or base == "CS2R":
        width = 2
    elif base in _FP64_OPS or (base in _CONV_OPS and mods[:1] == ("F64",)):
        width = 2
    elif base == "LDSM":
        width = {"4": 4, "2": 2}.get(mods[-1], 1)
    elif base in _TENSOR_OPS:
        width = 4 if "F32" in mods or "S32" in mods else 2
    if width == 1:
        return (f"{prefix}{number}",)
    return tuple(f"{prefix}{number + k}" for k in range(width))


_STACK_LDL_RE = re.compile(r"^(R\d+), \[R1(?:\+(-?0x[0-9a-f]+))?\]")
_STACK_STL_RE = re.compile(r"^\[R1(?:\+(-?0x[0-9a-f]+))?\], (R\d+)")


def _value_op(base: str, mods: tuple[str, ...], operands: str) -> tuple | None:
    """How a copy / constant load / spill store or reload changes register values, or None."""
    width = 4 if "128" in mods else 2 if "64" in mods else 1
    if base == "LDL" or base == "STL":
        m = (_STACK_LDL_RE if base == "LDL" else _STACK_STL_RE).match(operands)
        if m is None:  # not a stack slot (e.g. a local array indexed at run time)
            if base == "LDL":
                first = operands.split(",", 1)[0].strip()
                rm = _REG_RE.match(first)
                if rm:
                    return (V_FRESH, tuple(f"R{int(rm.group(2)) + k}" for k in range(width)))
            return None
        reg, off = (m.group(1), m.group(2)) if base == "LDL" else (m.group(2), m.group(1))
        offset = int(off, 16) if off else 0
        number = int(reg[1:])
        if base == "LDL":
            return (V_LOAD_SLOT, tuple((f"R{number + k}", offset + 4 * k) for k in range(width)))
        return (V_STORE_SLOT, tuple((offset + 4 * k, f"R{number + k}") for k in range(width)))
    ops = [o.strip() for o in operands.split(",")]
    if len(ops) < 2:
        return None

    def regs(text: str) -> list[str] | None:
        m = _REG_RE.match(text)
        if m is None:
            return None
        return [f"{m.group(1)}{int(m.group(2)) + k}" for k in range(width)]

    dest = regs(ops[0])
    if dest is None:
        return None
    if base == "IMAD":
        if mods[:1] != ("MOV",) or len(ops) != 4 or ops[1] != "RZ" or ops[2] != "RZ":
            return None
        src = ops[3]
    elif len(ops) == 2:  # MOV, LDC, ULDC, R2UR, UMOV
        src = ops[1]
    else:
        return None
    if _CONST_OPERAND_RE.match(src):
        return (V_CONST, tuple((d, (src, k)) for k, d in enumerate(dest)))
    srcs = regs(src)
    if srcs is None or base in ("LDC", "ULDC"):
        return None
    return (V_COPY, tuple(zip(dest, srcs)))


def _latency_class(base: str, mods: tuple[str, ...]) -> int:
    if base in ("LDG", "LD"):
        if "STRONG" in mods and ("GPU" in mods or "SYS" in mods) or "MMIO" in mods:
            return K_GLOBAL_L2
        if "NA" in mods:
            return K_GLOBAL_NA
        return K_GLOBAL
    if base == "LDL":
        return K_LOCAL
    if base in ("LDS", "LDSM"):
        return K_SHARED
    if base == "LDC":
        return K_CONST
    if base in ("S2R", "S2UR", "CS2R"):
        return K_SREG
    if base == "R2UR":
        return K_UMOV
    if base == "MUFU":
        return K_MUFU
    if base in _SHFL_OPS:
        return K_SHFL
    if base in _CONV_OPS or base in ("POPC", "FLO", "BREV"):
        return K_CONV
    if base in _FP64_OPS:
        return K_FP64
    if base in _TENSOR_OPS:
        return K_TENSOR
    if base in ("ATOMG", "ATOM", "RED"):
        return K_ATOMG
    if base == "ATOMS":
        return K_ATOMS
    if base == "LDGDEPBAR":
        return K_LDGDEPBAR
    return K_OTHER


def _natural_loops(instructions, ctrl, target, conditional, never) -> tuple[list[int], list[frozenset[int]]]:
    """``(back edges, their bodies)``: the backward branches whose target
    dominates them (every path from the function's first instruction to the
    branch passes the target), each with its natural loop's body (the header
    and every instruction that reaches the branch without passing it)."""
    n = len(instructions)
    succ: list[tuple[int, ...]] = []
    for i in range(n):
        c, t = ctrl[i], target[i]
        falls = i + 1 < n and instructions[i + 1].function == instructions[i].function
        local = 0 <= t < n and instructions[t].function == instructions[i].function
        if c == C_NONE or never[i]:
            out = (i + 1,) if falls else ()
        elif c in (C_BRA, C_DIV):
            out = ((t,) if local else ()) + ((i + 1,) if falls and (conditional[i] or c == C_DIV) else ())
        elif c == C_EXIT:
            out = (i + 1,) if falls and conditional[i] else ()
        elif c == C_CALL:  # returns (or, CALL.REL.NOINC to a local label, jumps on)
            out = ((t,) if local else ()) + ((i + 1,) if falls else ())
        else:  # RET, indirect branch
            out = ()
        succ.append(out)
    pred: list[list[int]] = [[] for _ in range(n)]
    for i, out in enumerate(succ):
        for j in out:
            pred[j].append(i)
    first: dict[str, int] = {}
    for i, ins in enumerate(instructions):
        first.setdefault(ins.function, i)
    back, bodies = [], []
    for b in range(n):
        h = target[b]
        if ctrl[b] != C_BRA or not 0 <= h <= b or instructions[h].function != instructions[b].function \
                or (h == b and not conditional[b]) or never[b]:
            continue
        # does the function's first instruction reach b without passing h?
        seen = {h}
        work = [first[instructions[b].function]]
        while work:
            x = work.pop()
            if x in seen:
                continue
            seen.add(x)
            work.extend(succ[x])
        if b in seen and b != h:
            continue  # h does not dominate b: an ordinary (out-of-line) jump
        body = {h}
        work = [b]
        while work:
            x = work.pop()
            if x in body:
                continue
            body.add(x)
            work.extend(pred[x])
        back.append(b)
        bodies.append(frozenset(body))
    return back, bodies


def decode(listing: SassListing, kernel: str | None = None) -> Program:
    """Flatten ``listing`` (all code sections) and pre-decode every instruction.

    ``kernel`` names the entry to start from (default: the first code
    section).  Calls into other sections (non-inlined ``.func``) and into
    subroutine symbols inside a section are resolved by name.
    """
    instructions = listing.instructions  # nvdisasm lists each code section contiguously
    if not instructions:
        raise ValueError("the SASS listing has no code")
    label_index: dict[str, int] = {}
    symbol_index: dict[str, int] = {}
    section_size: dict[str, int] = {}
    labels = listing.labels
    section = symbol = None
    for idx, ins in enumerate(instructions):
        if ins.function != section:
            section = ins.function
            symbol_index.setdefault(section, idx)
        section_size[section] = section_size.get(section, 0) + 1
        if ins.symbol and ins.symbol != symbol:
            symbol = ins.symbol
            symbol_index.setdefault(symbol, idx)
        if labels:
            for label in labels.get((section, ins.offset), ()):
                label_index.setdefault(label, idx)
    if kernel is None:
        kernel = instructions[0].function
    if kernel not in section_size:
        raise ValueError(f"no code section for kernel {kernel!r}; sections: {', '.join(section_size)}")

    n = len(instructions)
    start = symbol_index[kernel]
    addr: list[tuple | None] = [None] * n
    address_regs: set[str] = set()
    kinds = [K_FIXED] * n
    mem = [M_NONE] * n
    may_write: list[int] = []  # instructions that may write a GPR/UR (checked once addresses are known)
    value_ops: dict[int, tuple] = {}  # copies, constants, spill stores/reloads (see V_*)
    stall = [1] * n
    wait: list[tuple[int, ...]] = [()] * n
    wbar = [-1] * n
    rbar = [-1] * n
    never = [False] * n
    ctrl = [C_NONE] * n
    target = [-1] * n
    conditional = [False] * n
    depbar: list[tuple[int, int, tuple[int, ...]] | None] = [None] * n
    unresolved: list[str] = []
    info_cache: dict[str, tuple] = {}
    sched_cache: dict[tuple[str, int], tuple] = {}  # (opcode, control bits) -> scheduling fields
    for i, ins in enumerate(instructions):
        opcode = ins.opcode
        info = info_cache.get(opcode)
        if info is None:
            parts = opcode.split(".")
            info = info_cache[opcode] = (parts[0], tuple(parts[1:]))
        base, mods = info
        key = (opcode, ins.high >> CONTROL_SHIFT_IN_HIGH_WORD)
        sched = sched_cache.get(key)
        if sched is None:
            c = ins.control
            kind = K_FIXED
            if c.write_barrier != NO_BARRIER:
                kind = _latency_class(base, mods)
            elif base == "LDGDEPBAR":
                kind = K_LDGDEPBAR
            sched = sched_cache[key] = (
                c.stall if c.stall > 1 else 1,
                _WAIT_TUPLES[c.wait_mask],
                -1 if c.write_barrier == NO_BARRIER else c.write_barrier,
                -1 if c.read_barrier == NO_BARRIER else c.read_barrier,
                kind,
            )
        stall[i], wait[i], wbar[i], rbar[i], kinds[i] = sched
        guard = ins.guard
        if guard is not None:
            never[i] = guard == "!PT"
            conditional[i] = guard != "PT"
        operands = ins.operands
        if base not in _NO_GPR_DEST and operands:
            may_write.append(i)
        if base in _VALUE_OPS:
            vop = _value_op(base, mods, operands)
            if vop is not None:
                value_ops[i] = vop
        if base in _MEMORY_OPS:
            if base != "CCTL" or "PF1" in mods:
                parsed = _parse_address(_ANNOTATION_RE.sub("", operands))
                if parsed is not None:
                    regs, offset = parsed
                    addr[i] = (regs, offset, _access_size(mods))
                    address_regs.update(regs)
            if base == "LDGSTS":
                mem[i] = M_LDGSTS_L2 if "BYPASS" in mods else M_LDGSTS
            elif base == "CCTL":
                if "PF1" in mods:
                    mem[i] = M_PREFETCH_L1
                elif "IVALL" in mods or "IV" in mods:
                    mem[i] = M_INVALIDATE_L1
        elif base in _CONTROL_OPS:
            if base in ("BRA", "JMP"):
                ctrl[i] = C_DIV if "DIV" in mods else C_BRA
                first = operands.split(",", 1)[0].strip()
                if _PRED_OPERAND_RE.match(first) and first != "PT":
                    conditional[i] = True  # BRA.U !UP0, `(...)
                m = _TARGET_RE.search(operands)
                name = m.group(1) if m else None
                if name in label_index:
                    target[i] = label_index[name]
                elif name in symbol_index:
                    target[i] = symbol_index[name]
                else:
                    ctrl[i] = C_STOP
                    unresolved.append(ins.text)
            elif base in ("BRX", "JMX"):
                ctrl[i] = C_STOP
                unresolved.append(ins.text)
            elif base in ("EXIT", "KILL"):
                ctrl[i] = C_EXIT
            elif base == "CALL":
                m = _TARGET_RE.search(operands)
                name = m.group(1) if m else None
                idx = symbol_index.get(name, label_index.get(name)) if name else None
                if idx is None:
                    ctrl[i] = C_STOP
                    unresolved.append(ins.text)
                elif "NOINC" in mods and name not in symbol_index and \
                        instructions[idx].function == ins.function:
                    # a CALL.REL.NOINC to a local label of its own function (not to a subroutine
                    # symbol, whose RET.REL.NODEC returns through a register) is how ptxas leaves
                    # some loops: the label's block jumps on (BRA) and never returns, so the walk
                    # treats it as a guarded jump -- a loop exit the trip counts can steer
                    ctrl[i] = C_BRA
                    target[i] = idx
                    first = operands.split(",", 1)[0].strip()
                    if _PRED_OPERAND_RE.match(first) and first != "PT":
                        conditional[i] = True
                else:
                    ctrl[i] = C_CALL
                    target[i] = idx
            elif base == "RET":
                ctrl[i] = C_RET
            elif base == "DEPBAR":
                m = _DEPBAR_RE.search(operands)
                if m:
                    extra = tuple(int(x) for x in re.findall(r"\d", m.group(3) or ""))
                    depbar[i] = (int(m.group(1)), int(m.group(2), 0), extra)
    # Only registers whose value can reach an address need tracking: the
    # address registers, and (to a fixed point) the sources of copies into them
    # and the data registers of spill stores to slots reloaded into them.
    relevant = set(address_regs)
    relevant_slots: set[int] = set()
    changed = bool(relevant)
    while changed:
        changed = False
        for op, pairs in value_ops.values():
            if op == V_COPY:
                for d, src in pairs:
                    if d in relevant and src not in relevant:
                        relevant.add(src)
                        changed = True
            elif op == V_LOAD_SLOT:
                for d, off in pairs:
                    if d in relevant and off not in relevant_slots:
                        relevant_slots.add(off)
                        changed = True
            elif op == V_STORE_SLOT:
                for off, src in pairs:
                    if off in relevant_slots and src not in relevant:
                        relevant.add(src)
                        changed = True
    values: list[tuple | None] = [None] * n
    if relevant:
        # A destination of up to 4 registers starting at most 3 below a
        # relevant one may cover it.
        candidates = set()
        dest_cache: dict[tuple[str, str], tuple[str, ...]] = {}
        for r in relevant:
            m = _REG_RE.match(r)
            if m:
                candidates.update(f"{m.group(1)}{int(m.group(2)) - j}" for j in range(4))
        for i in may_write:
            operands = instructions[i].operands
            comma = operands.find(",")
            first = operands if comma < 0 else operands[:comma]
            if first in candidates or first[:1] in "P!":
                opcode = instructions[i].opcode
                ckey = (opcode, first) if first[:1] not in "P!" else (opcode, operands[:operands.find(",", comma + 1)])
                written = dest_cache.get(ckey)
                if written is None:
                    base, mods = info_cache[opcode]
                    written = dest_cache[ckey] = tuple(r for r in _dest_registers(base, mods, operands)
                                                       if r in relevant)
                if written:
                    values[i] = (V_FRESH, written)
        for i, (op, pairs) in value_ops.items():
            if op == V_STORE_SLOT:
                kept = tuple((off, src) for off, src in pairs if off in relevant_slots)
            else:
                kept = tuple((d, x) for d, x in pairs if d in relevant)
            if kept:
                values[i] = (op, kept)
            elif op != V_STORE_SLOT and values[i] is not None:
                values[i] = None  # its writes are described by the value op, none relevant

    # Loops: a backward branch whose target dominates it closes a natural loop
    # (_natural_loops): its body is the header plus every instruction that
    # reaches the branch without passing the header.  A backward branch whose
    # target does not dominate it is an ordinary jump: ptxas places a block
    # out of line, before the loop header, jumps back to it and on again
    # (unroll's guarded form: the q-guarded copies sit before the header).
    # A conditional branch (or EXIT) inside a loop that leaves it is an exit
    # of the innermost loop it leaves.  Only exits of loops whose back edge is
    # unconditional get the static fallback's "leave after N iterations" rule
    # (otherwise the conditional back edge itself ends the loop and exits stay
    # not taken).  An unconditional branch to itself is ptxas's trap after the
    # final EXIT (never reached), not a loop.
    back_edges, loop_body = _natural_loops(instructions, ctrl, target, conditional, never)
    body_of = dict(zip(back_edges, loop_body))
    loop_of_exit = [-1] * n
    for i in range(n):
        if not conditional[i] or ctrl[i] not in (C_BRA, C_EXIT) or i in body_of:
            continue
        best = -1
        for b in back_edges:
            body = body_of[b]
            if i in body and (ctrl[i] == C_EXIT or target[i] not in body):
                if best < 0 or len(body) < len(body_of[best]):
                    best = b
        if best >= 0 and not conditional[best]:
            loop_of_exit[i] = best

    return Program(
        arch=listing.arch,
        kernel=kernel,
        start=start,
        instructions=tuple(instructions),
        stall=tuple(stall),
        wait=tuple(wait),
        wbar=tuple(wbar),
        rbar=tuple(rbar),
        kind=tuple(kinds),
        mem=tuple(mem),
        addr=tuple(addr),
        values=tuple(values),
        never=tuple(never),
        ctrl=tuple(ctrl),
        target=tuple(target),
        conditional=tuple(conditional),
        depbar=tuple(depbar),
        loop_of_exit=tuple(loop_of_exit),
        back_edges=tuple(back_edges),
        loop_body=tuple(loop_body),
        kernel_size=section_size[kernel],
        unresolved=tuple(unresolved),
    )
