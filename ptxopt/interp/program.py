"""A module prepared for interpretation: static variable layout and decoded
functions.

Everything that does not depend on a launch is computed once here and reused
by every launch of every kernel of the module (verification runs the same
module many times):

* **Static addresses.** Module-scope ``.global`` variables are placed first in
  the global window, in declaration order, so their addresses are the same in
  every launch (and in an original and a transformed module that declare the
  same variables); ``.const`` variables get the const window; ``.shared``
  variables (module scope, and those nvcc "demotes" into function bodies) get
  separate ranges of the shared window, and every ``.extern .shared`` array
  names the one dynamic shared block after them, sized at launch; kernel
  parameters are laid out in the param window with their alignment.
* **Decoding** of each function on first use (:mod:`ptxopt.interp.decode`).
"""

from __future__ import annotations

from dataclasses import dataclass

from ptxopt.interp.decode import Decoder, DecodedFunction
from ptxopt.interp.literals import decl_align, decl_elem_bytes, decl_init, decl_size
from ptxopt.interp.errors import LaunchError, UnsupportedInstruction
from ptxopt.interp.device_memory import ALIGN, GAP, GLOBAL_BASE, WINDOW, round_up
from ptxopt.ptx.ir import Decl, Function, Module, iter_decls

DYNAMIC_SHARED = "<dynamic shared>"


@dataclass
class StaticVar:
    name: str
    space: str  # global, const, shared
    address: int  # generic address
    size: int | None  # None: the dynamic shared block (sized at launch)
    align: int
    init: bytes | Exception | None = None  # an exception: the initialiser is unsupported
    elem: int = 1  # element size, for ``name[i]`` operands


@dataclass
class ParamSlot:
    name: str
    offset: int
    size: int
    dtype: str  # PTX type without the dot (b8 for byte arrays)
    is_ptr: bool


class Program:
    """A parsed module ready to run (see module doc)."""

    def __init__(self, module: Module):
        self.module = module
        self.functions: dict[str, Function] = {}
        for f in module.functions:
            if f.body is not None:
                self.functions[f.name] = f
        self._decoded: dict[str, DecodedFunction] = {}
        self.statics: dict[str, StaticVar] = {}
        self.dynamic_shared_names: set[str] = set()
        self.static_shared_bytes = 0
        self._layout()
        self._params: dict[str, list[ParamSlot]] = {}

    # -- layout -------------------------------------------------------------

    def _layout(self) -> None:
        decls: list[Decl] = [i for i in self.module.items if type(i) is Decl]
        for f in self.module.functions:
            if f.body is not None:
                decls.extend(iter_decls(f.body))
        next_global = GLOBAL_BASE
        next_const = WINDOW["const"]
        next_shared = 0
        pending: list[tuple[StaticVar, Decl, object]] = []
        for d in decls:
            sp = d.space
            if sp not in (".global", ".const", ".shared"):
                continue
            if any(a in (".texref", ".surfref", ".samplerref") for a in d.attrs):
                continue
            extern = ".extern" in d.attrs
            for it in d.items:
                if it.name in self.statics:
                    continue
                size = decl_size(d, it)
                align = max(decl_align(d), 1)
                elem = decl_elem_bytes(d)
                if sp == ".shared":
                    if size is None or (extern and not size):
                        self.dynamic_shared_names.add(it.name)
                        continue
                    off = round_up(next_shared, ALIGN)
                    self.statics[it.name] = StaticVar(it.name, "shared", WINDOW["shared"] + off, size, align,
                                                      elem=elem)
                    next_shared = off + size + GAP
                    self.static_shared_bytes += size
                    continue
                if extern:
                    continue  # defined elsewhere: using it is unsupported
                if size is None:  # name[] = {...}: the initialiser gives the size
                    size = elem * _init_count(it, d)
                if sp == ".global":
                    addr = next_global
                    next_global = round_up(addr + max(size, 1) + GAP, ALIGN)
                else:
                    addr = next_const
                    next_const = round_up(addr + max(size, 1) + GAP, ALIGN)
                v = StaticVar(it.name, sp[1:], addr, size, align, elem=elem)
                self.statics[it.name] = v
                pending.append((v, d, it))
        # initialisers may name other variables (``.u64 p = table+8``)
        for v, d, it in pending:
            try:
                v.init = decl_init(d, it, self._init_symbol)
            except UnsupportedInstruction as e:
                v.init = e  # raised when a launch needs the variable's bytes
        self.global_end = next_global
        self.dynamic_shared_base = WINDOW["shared"] + round_up(next_shared, ALIGN)

    def _init_symbol(self, name: str, generic: bool) -> int | None:
        v = self.statics.get(name)
        if v is None:
            return None
        return v.address if generic else v.address - WINDOW[v.space]

    def kernel_params(self, entry: str) -> list[ParamSlot]:
        """Parameter layout of a kernel (offsets inside its parameter block)."""
        got = self._params.get(entry)
        if got is not None:
            return got
        fn = self.entry(entry)
        out: list[ParamSlot] = []
        off = 0
        for d in fn.params or ():
            if d.space != ".param":
                raise UnsupportedInstruction(f"kernel parameter {d.name} in state space {d.space}")
            for it in d.items:
                size = decl_size(d, it)
                if size is None:
                    raise UnsupportedInstruction(f"unsized kernel parameter {it.name}")
                align = max(decl_align(d), 1)
                off = round_up(off, align)
                t = d.dtype[1:] if d.dtype else "b8"
                out.append(ParamSlot(it.name, off, size, t, d.is_ptr or (t in ("u64", "b64", "s64") and not it.dims)))
                off += size
        self._params[entry] = out
        return out

    # -- lookups --------------------------------------------------------------

    def entry(self, name: str | None = None) -> Function:
        try:
            return self.module.pick_entry(name)
        except LookupError as e:
            raise LaunchError(str(e)) from None

    def decoded(self, name: str) -> DecodedFunction:
        d = self._decoded.get(name)
        if d is None:
            fn = self.functions.get(name)
            if fn is None:
                raise UnsupportedInstruction(f"function {name} has no body in this module")
            d = self._decoded[name] = Decoder(self, fn).decode()
        return d

    def static_address(self, name: str, fn: Function) -> tuple[int, str] | None:
        """``(generic address, space)`` of a static variable or of a parameter
        of entry ``fn``; None when unknown."""
        if fn.is_entry:
            for p in self.kernel_params(fn.name):
                if p.name == name:
                    return WINDOW["param"] + p.offset, "param"
        v = self.statics.get(name)
        if v is not None:
            return v.address, v.space
        if name == "WARP_SZ":
            return None
        if name in self.dynamic_shared_names:
            return self.dynamic_shared_base, "shared"
        return None


def _init_count(item, decl: Decl) -> int:
    init = item.init if getattr(item, "init", None) is not None else decl.init
    if init is None:
        return 0
    if isinstance(init, str):
        return 1
    n = 0

    def walk(x):
        nonlocal n
        if isinstance(x, str):
            n += 1
        else:
            for y in x:
                walk(y)

    walk(init)
    return n
