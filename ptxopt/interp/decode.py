"""Decoding: each instruction becomes a :class:`Step` holding a closure.

Why pre-decode: a kernel's instructions run many times (loops, every CTA,
every verification trial), so everything that depends only on the text is
worked out once: which register slot an operand names, its width versus the
instruction type, immediates as typed arrays, symbol addresses, branch
targets. What is left at run time is a chain of small closures that index
numpy arrays, which keeps Python's per-instruction overhead to a few
microseconds.

Registers live in *slots* (``Frame.r[slot]``) holding raw bits of the
declared width (see :mod:`ptxopt.interp.dtypes`). A ``.reg`` declared in a
nested ``{ }`` scope is its own slot even when an outer scope declares the
same name, and ``%r<100000>`` costs nothing until ``%r7`` is used.

Operand width rules (PTX ISA "Operand Size Exceeding Instruction-Type
Size"): a source register wider than the instruction type is truncated; a
destination register wider than the type is sign-extended for signed
integer types and zero-extended otherwise. A register narrower than the type
is invalid PTX and is refused.

The opcode semantics themselves are in the ``ops_*`` modules: each exports a
table ``OPS = {opcode: compile_function}``; a compile function receives the
instruction and this module's :class:`Decoder` and returns either a plain
``run(frame, sel)`` closure (a straight-line instruction: the decoder adds
the guard) or a :class:`Step` of another kind that the engine handles.
"""

from __future__ import annotations

import numpy as np

from ptxopt.ptx import opcodes
from ptxopt.interp import dtypes
from ptxopt.interp.dtypes import UINT, SINT
from ptxopt.interp.errors import InterpError, UnsupportedInstruction, describe
from ptxopt.interp.device_memory import WINDOW
from ptxopt.interp.ops.memory import global_read_bytes
from ptxopt.interp.cta_state import ALL
from ptxopt.interp.literals import decl_align, decl_size, imm_array
from ptxopt.ptx.ir import Addr, Block, Decl, Imm, Instruction, Label, Neg, Reg, Sym

# the step kinds and Step live in ptxopt.interp.step (the ops modules use them without this module)
from ptxopt.interp.step import BARRIER, BRANCH, BRX, CALL, COLLECTIVE, EXIT, RET, SIMPLE, Step  # noqa: E402,F401


class DecodedFunction:
    """A function ready to run: its steps, labels, register slots and the
    variables each activation allocates."""

    def __init__(self, fn):
        self.fn = fn
        self.name = fn.name
        self.is_entry = fn.is_entry
        self.code: list[Step] = []
        self.labels: dict[str, int] = {}
        self.slot_dtypes: list[np.dtype] = []
        self.slot_names: list[str] = []
        self.frame_vars: list[tuple[str, str, int, int]] = []  # (name, space, size, align)
        self.formals: list[tuple[str, object]] = []  # (name, Decl) of .func params
        self.returns: list[tuple[str, object]] = []
        self.reg_formals: list[tuple[str, int]] = []  # .reg params: (name, slot)
        self.reg_returns: list[tuple[str, int]] = []


# --------------------------------------------------------------------------
# register scopes
# --------------------------------------------------------------------------


def _split_digits(name: str) -> tuple[str, int | None]:
    i = len(name)
    while i > 0 and name[i - 1].isdigit():
        i -= 1
    if i == len(name):
        return name, None
    return name[:i], int(name[i:])


class Scope:
    """Registers declared in one ``{ }`` block.

    Lookups are memoised per scope: an unrolled kernel names the same few
    hundred registers tens of thousands of times while it is decoded. A
    declaration anywhere in the function's tree of scopes invalidates every
    memo of that tree (``_clock``, shared from the root down), so a lookup
    never sees a stale answer whatever order decoding happens in.
    """

    _ids = 0

    def __init__(self, parent: "Scope | None"):
        Scope._ids += 1
        self.id = Scope._ids
        self.parent = parent
        self.exact: dict[str, str] = {}  # name -> type
        self.ranges: dict[str, tuple[int, str]] = {}  # prefix -> (count, type)
        self._clock: list[int] = parent._clock if parent is not None else [0]  # declarations in this tree
        self._memo: dict[str, tuple[tuple[int, str], str] | None] = {}
        self._memo_version = -1

    def declare(self, decl: Decl) -> None:
        self._clock[0] += 1
        t = decl.dtype[1:] if decl.dtype else "b32"
        for it in decl.items:
            if it.count is not None:
                self.ranges[it.name] = (it.count, t)
            else:
                self.exact[it.name] = t

    def lookup(self, name: str) -> tuple[tuple[int, str], str] | None:
        if self._memo_version != self._clock[0]:
            self._memo = {}
            self._memo_version = self._clock[0]
        try:
            return self._memo[name]
        except KeyError:
            hit = self._memo[name] = self._resolve(name)
            return hit

    def _resolve(self, name: str) -> tuple[tuple[int, str], str] | None:
        s = self
        split = None
        while s is not None:
            t = s.exact.get(name)
            if t is not None:
                return (s.id, name), t
            if s.ranges:
                if split is None:
                    split = _split_digits(name)
                prefix, num = split
                if num is not None:
                    r = s.ranges.get(prefix)
                    if r is not None and num < r[0]:
                        return (s.id, name), r[1]
            s = s.parent
        return None


# --------------------------------------------------------------------------
# the decoder
# --------------------------------------------------------------------------


class Decoder:
    """Decodes one function; the ``ops_*`` compile functions call its
    ``read``/``write``/``addr`` helpers to build operand accessors."""

    def __init__(self, program, fn):
        self.program = program
        self.fn = fn
        self.out = DecodedFunction(fn)
        self.slots: dict[tuple[int, str], int] = {}
        self.scope: Scope | None = None
        self.ins: Instruction | None = None
        self.frame_syms: set[str] = set()
        self._slot_dtype: dict[int, np.dtype] = {}
        self.branchtargets: dict[str, tuple[str, ...]] = {}
        self._readers: dict = {}

    # -- entry point ---------------------------------------------------------

    def decode(self) -> DecodedFunction:
        from ptxopt.interp.ops import OPS

        fn, out = self.fn, self.out
        root = Scope(None)
        self.scope = root
        if not fn.is_entry:
            for kind, decls in (("formals", fn.params or ()), ("returns", fn.ret_params or ())):
                for d in decls:
                    for it in d.items:
                        if d.space == ".reg":
                            root.declare(Decl(d.attrs, (it,)))
                            slot = self.slot_of(it.name)
                            (out.reg_formals if kind == "formals" else out.reg_returns).append(
                                (it.name, slot))
                        else:
                            getattr(out, kind).append((it.name, d))
                            self.frame_syms.add(it.name)
        items: list[tuple[object, Scope]] = []
        self._flatten(fn.body, root, items, top=True)
        for stmt, scope in items:
            if type(stmt) is Label:
                out.labels[stmt.name] = len(items)  # placeholder, fixed below
        # labels point at the next instruction
        pc = 0
        pending: list[str] = []
        flat: list[tuple[Instruction, Scope]] = []
        for stmt, scope in items:
            if type(stmt) is Label:
                pending.append(stmt.name)
                continue
            for name in pending:
                out.labels[name] = pc
            pending = []
            flat.append((stmt, scope))
            pc += 1
        for name in pending:
            out.labels[name] = pc
        for ins, scope in flat:
            self.scope = scope
            self.ins = ins
            comp = OPS.get(ins.opcode)
            if comp is None:
                out.code.append(_unsupported_step(ins, f"unsupported opcode {ins.opcode} (the interpreter "
                                                       "does not implement it)"))
                continue
            try:
                res = comp(ins, self)
            except InterpError as e:
                # raised only if the instruction is reached: a kernel may hold
                # code the interpreter cannot run on paths it never takes
                out.code.append(_unsupported_step(ins, str(e), exc=e))
                continue
            except Exception as e:  # an operand form the compile function did not expect
                out.code.append(_unsupported_step(
                    ins, f"unsupported form of opcode {ins.opcode} ({type(e).__name__}: {e})"))
                continue
            step = res if isinstance(res, Step) else self._simple(res, ins)
            if step.ins is None:
                step.ins = ins
            if ins.guard and step.guard is None:  # SIMPLE steps fold it in; coverage reads it
                step.guard, step.neg = self.guard_slot(ins)
            out.code.append(step)
        # a function falls off its end into an implicit ret
        out.code.append(Step(RET, ins=Instruction("ret", line=0)))
        out.slot_dtypes = [self._slot_dtype[i] for i in range(len(self.slots))]
        out.slot_names = [k[1] for k in sorted(self.slots, key=self.slots.get)]
        return out

    def _flatten(self, block: Block | None, scope: Scope, items: list, top: bool = False) -> None:
        if block is None:
            return
        last_label = None
        for item in block.items:
            t = type(item)
            if t is Instruction or t is Label:
                items.append((item, scope))
                last_label = item.name if t is Label else None
            elif t is Decl:
                if item.attrs and item.attrs[0] == ".branchtargets" and last_label:
                    self.branchtargets[last_label] = tuple(i.name for i in item.items)
                sp = item.space
                if sp == ".reg":
                    scope.declare(item)
                elif sp in (".local", ".param"):
                    for it in item.items:
                        size = decl_size(item, it)
                        if size is None:
                            raise UnsupportedInstruction(f"unsized {sp} variable {it.name}")
                        self.out.frame_vars.append((it.name, sp[1:], size, decl_align(item)))
                        self.frame_syms.add(it.name)
                # .shared/.global/.const inside a body are static: see Program
            elif t is Block:
                self._flatten(item, Scope(scope), items)

    # -- slots -----------------------------------------------------------------

    def slot_of(self, name: str) -> int:
        hit = self.scope.lookup(name)
        if hit is None:
            raise InterpError(f"{self.where()}: register {name} is not declared")
        key, t = hit
        s = self.slots.get(key)
        if s is None:
            s = self.slots[key] = len(self.slots)
            self._slot_dtype[s] = dtypes.storage_dtype(dtypes.bits(t))
        return s

    def carry_slot(self) -> int:
        """A hidden per-thread register for the carry flag of ``.cc`` chains."""
        key = (0, "%%carry")
        s = self.slots.get(key)
        if s is None:
            s = self.slots[key] = len(self.slots)
            self._slot_dtype[s] = np.dtype(np.uint8)
        return s

    def reg_bits(self, name: str) -> int:
        return dtypes.bits(self.scope.lookup(name)[1])

    # -- helpers for ops ---------------------------------------------------------

    def where(self) -> str:
        return describe(self.ins) if self.ins is not None else self.fn.name

    def unsupported(self, what: str = "") -> UnsupportedInstruction:
        msg = f"{self.where()}: not supported"
        return UnsupportedInstruction(msg + (f": {what}" if what else ""))

    def mods(self, allowed: set[str] | frozenset[str], ins: Instruction | None = None) -> list[str]:
        """The type modifiers of the instruction (in order); any other
        modifier outside ``allowed`` is refused."""
        ins = ins or self.ins
        types = []
        for m in ins.modifiers:
            if m in opcodes.TYPE_BITS:
                types.append(m)
            elif m not in allowed:
                raise self.unsupported(f"modifier .{m}")
        return types

    def guard_slot(self, ins: Instruction) -> tuple[int, bool]:
        return self.slot_of(ins.guard), ins.guard_neg

    def _simple(self, run, ins: Instruction) -> Step:
        if ins.guard:
            g, neg = self.guard_slot(ins)
            run = _guarded(run, g, neg, global_read_bytes(ins), ins)
        return Step(SIMPLE, run, ins)

    # -- operand readers ---------------------------------------------------------

    def read(self, op, t: str):
        """``reader(frame, sel) -> array`` of values of type ``t``.

        Readers are pure functions of (scope, operand, type), so one closure
        serves every instruction that reads the same operand the same way."""
        key = (self.scope.id, op, t)
        try:
            return self._readers[key]
        except KeyError:
            r = self._readers[key] = self._read(op, t)
            return r
        except TypeError:  # an unhashable operand
            return self._read(op, t)

    def _read(self, op, t: str):
        if type(op) is Sym and op.index is None and not op.offset and self.scope.lookup(op.name):
            op = Reg(op.name)  # a register named without % (inline asm, .reg parameters)
        top = type(op)
        if top is Reg:
            if opcodes.is_special_reg(op.name):
                return self._sreg_reader(op.name, t)
            if self._is_variable(op.name):
                return self.sym_value(Sym(op.name), t)
            s = self.slot_of(op.name)
            rb = self.reg_bits(op.name)
            if t == "pred":
                if rb != 1:
                    raise InterpError(f"{self.where()}: {op.name} is not a predicate")
                return lambda fr, sel: fr.r[s][sel]
            if rb == 1:
                raise InterpError(f"{self.where()}: predicate {op.name} used as .{t}")
            tb = dtypes.bits(t)
            vd = dtypes.value_dtype(t)
            if rb == tb:
                if vd == UINT[tb]:
                    return lambda fr, sel: fr.r[s][sel]
                return lambda fr, sel: fr.r[s][sel].view(vd)
            if rb > tb:
                ut = UINT[tb]
                return lambda fr, sel: fr.r[s][sel].astype(ut).view(vd)
            raise InterpError(f"{self.where()}: register {op.name} ({rb} bits) is narrower than .{t}")
        if isinstance(op, Imm):
            arr = imm_array(op, t)
            return lambda fr, sel: arr
        if top is Neg:
            if t != "pred":
                raise self.unsupported(f"negated operand {op}")
            inner = self.read(op.reg, "pred")
            return lambda fr, sel: ~inner(fr, sel)
        if top is Sym:
            return self.sym_value(op, t)
        raise self.unsupported(f"operand {op} as .{t}")

    def _is_variable(self, name: str) -> bool:
        """A ``%name`` that is a variable, not a register (``.global .u32 %x``)."""
        return self.scope.lookup(name) is None and (
            name in self.frame_syms or self.program.static_address(name, self.fn) is not None)

    def _sreg_reader(self, name: str, t: str):
        tb = dtypes.bits(t)
        vd = dtypes.value_dtype(t)
        wide = name in ("%clock64", "%globaltimer") or name.endswith("_64")
        sb = 64 if wide else 32
        if tb == sb:
            if vd == UINT[sb]:
                return lambda fr, sel: fr.cta.sreg(name)[sel]
            return lambda fr, sel: fr.cta.sreg(name)[sel].view(vd)
        ut = UINT[tb]
        return lambda fr, sel: fr.cta.sreg(name)[sel].astype(ut).view(vd)

    def sym_value(self, op: Sym, t: str):
        """The address of a variable in its own state space (``mov.u32 %r,
        smem`` gives the shared offset), as a value of type ``t``."""
        vd = dtypes.value_dtype(t)
        ut = UINT[dtypes.bits(t)]
        name = op.name
        if name == "WARP_SZ" and name not in self.frame_syms:
            arr = imm_array(Imm("32"), t)
            return lambda fr, sel: arr
        if op.index is not None:
            if name in self.frame_syms or name not in self.program.statics:
                raise self.unsupported(f"array element operand {op}")
            op = Sym(name, op.offset + op.index * self.program.statics[name].elem)
        if name in self.frame_syms:
            # frame variables (.local, call .param) hold generic addresses in
            # ``fr.sym``; the value is the offset inside their space
            win = WINDOW[self._frame_space(name)]
            off = op.offset

            def rd(fr, sel):
                v = (fr.sym[name] - win + off) & 0xFFFFFFFFFFFFFFFF
                return np.array([v], dtype=np.uint64).astype(ut).view(vd)

            return rd
        addr = self.program.static_address(name, self.fn)
        if addr is None:
            raise self.unsupported(f"symbol {name} as a value")
        gaddr, space = addr
        v = (gaddr - WINDOW[space] + op.offset) & 0xFFFFFFFFFFFFFFFF
        arr = np.array([v], dtype=np.uint64).astype(ut).view(vd)
        return lambda fr, sel: arr

    def _frame_space(self, name: str) -> str:
        for n, sp, _, _ in self.out.frame_vars:
            if n == name:
                return sp
        return "param"  # formal or return parameter

    def pred(self, op):
        """Reader for a predicate operand (``%p`` or ``!%p``)."""
        return self.read(op, "pred")

    # -- operand writers ---------------------------------------------------------

    def write(self, op, t: str):
        """``writer(frame, sel, value)`` storing a value of type ``t``."""
        if type(op) in (Sym, Reg) and op.name == "_":
            return lambda fr, sel, v: None
        if type(op) is Sym and op.index is None and not op.offset and self.scope.lookup(op.name):
            op = Reg(op.name)
        if type(op) is not Reg or opcodes.is_special_reg(op.name):
            raise self.unsupported(f"destination {op}")
        s = self.slot_of(op.name)
        rb = self.reg_bits(op.name)
        if t == "pred":
            if rb != 1:
                raise InterpError(f"{self.where()}: {op.name} is not a predicate")

            def wp(fr, sel, v):
                fr.r[s][sel] = v

            return wp
        if rb == 1:
            raise InterpError(f"{self.where()}: predicate {op.name} written as .{t}")
        tb = dtypes.bits(t)
        vd = dtypes.value_dtype(t)
        ut = UINT[tb]
        if rb == tb:
            def w(fr, sel, v):
                if v.dtype != vd:
                    v = coerce(v, vd)
                fr.r[s][sel] = v.view(ut)

            return w
        if rb > tb:
            wide = UINT[rb]
            if dtypes.is_signed(t):
                st = SINT[rb]

                def ws(fr, sel, v):
                    if v.dtype != vd:
                        v = coerce(v, vd)
                    fr.r[s][sel] = v.astype(st).view(wide)

                return ws

            def wz(fr, sel, v):
                if v.dtype != vd:
                    v = coerce(v, vd)
                fr.r[s][sel] = v.view(ut).astype(wide)

            return wz
        raise InterpError(f"{self.where()}: register {op.name} ({rb} bits) is narrower than .{t}")

    # -- addresses -------------------------------------------------------------------

    def addr(self, op: Addr, space: str):
        """``reader(frame, sel) -> uint64 generic addresses`` for ``[base+off]``
        accessed in ``space`` (``generic`` for no space)."""
        if type(op) is not Addr:
            raise self.unsupported(f"address operand {op}")
        if op.extra:
            raise self.unsupported(f"address with extra items {op}")
        base = op.base
        off = op.offset
        win = WINDOW[space]
        if type(base) is Reg and not opcodes.is_special_reg(base.name) and self._is_variable(base.name):
            base = Sym(base.name)
        if type(base) is Sym:
            name = base.name
            off += base.offset
            if base.index is not None:
                if name in self.frame_syms or name not in self.program.statics:
                    raise self.unsupported(f"array element address {op}")
                off += base.index * self.program.statics[name].elem
            if name in self.frame_syms:
                return lambda fr, sel: np.array([(fr.sym[name] + off) & 0xFFFFFFFFFFFFFFFF],
                                                dtype=np.uint64)
            a = self.program.static_address(name, self.fn)
            if a is None:
                raise self.unsupported(f"address of symbol {name}")
            arr = np.array([(a[0] + off) & 0xFFFFFFFFFFFFFFFF], dtype=np.uint64)
            return lambda fr, sel: arr
        if isinstance(base, Imm):
            arr = np.array([(int(base.value()) + off + win) & 0xFFFFFFFFFFFFFFFF], dtype=np.uint64)
            return lambda fr, sel: arr
        if type(base) is Reg:
            rb = 64 if opcodes.is_special_reg(base.name) else self.reg_bits(base.name)
            rd = self.read(base, "u64" if rb == 64 else "u32")
            add = np.uint64((off + win) & 0xFFFFFFFFFFFFFFFF)
            if rb == 64:
                if add == 0:
                    return rd
                return lambda fr, sel: rd(fr, sel) + add
            # 32-bit addresses: the offset wraps in 32 bits, then the window applies
            off32 = np.uint32(off & 0xFFFFFFFF)
            w64 = np.uint64(win)
            return lambda fr, sel: (rd(fr, sel) + off32).astype(np.uint64) + w64
        raise self.unsupported(f"address {op}")

    def branch_table(self, op) -> tuple[str, ...]:
        if type(op) is not Sym or op.name not in self.branchtargets:
            raise self.unsupported(f"branch table {op} (no .branchtargets list)")
        return self.branchtargets[op.name]

    def label(self, op) -> int:
        if type(op) is not Sym or op.name not in self.out.labels:
            raise InterpError(f"{self.where()}: unknown branch target {op}")
        return self.out.labels[op.name]


def coerce(v: np.ndarray, vd: np.dtype) -> np.ndarray:
    """Bring a result to the destination's value dtype: same width means the
    same bits (a float result written to a ``.b32`` destination); integers of
    another width wrap. Anything else is a bug in an opcode implementation."""
    if v.dtype.itemsize == vd.itemsize:
        return v.view(vd)
    if v.dtype.kind in "iub" and vd.kind in "iu":
        return v.astype(vd)
    raise InterpError(f"internal: a {v.dtype} result for a {vd} destination")


def _guarded(run, g: int, neg: bool, read_bytes: int = 0, ins=None):
    """Run only for the threads whose guard predicate holds. ``read_bytes``:
    what one thread of a global read reads; the threads whose guard is false
    count that many masked bytes each while reads are recorded
    (:meth:`ptxopt.interp.device_memory.Memory.note_masked`)."""

    def guarded(fr, sel):
        p = fr.r[g][sel]
        if neg:
            p = ~p
        if p.all():
            return run(fr, sel)
        if read_bytes and fr.cta.mem.masked is not None:
            fr.cta.mem.note_masked(read_bytes * int(p.size - np.count_nonzero(p)), ins)
        if not p.any():
            return None
        base = fr.cta.all_idx if sel is ALL else sel
        return run(fr, base[p])

    return guarded


def _unsupported_step(ins: Instruction, msg: str, exc: Exception | None = None) -> Step:
    text = msg if msg.startswith("line ") or describe(ins) in msg else f"{describe(ins)}: {msg}"
    cls = type(exc) if exc is not None else UnsupportedInstruction

    def fail(fr, sel):
        raise cls(text)

    st = Step(SIMPLE, fail, ins)
    st.aux = text
    return st
