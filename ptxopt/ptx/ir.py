"""The PTX intermediate representation.

Design choices, and why:

* **Lossless and generic.** An instruction is ``guard? opcode(.modifier)* operands``
  with the modifiers kept as an ordered tuple of strings, so an opcode or
  modifier nobody has taught ptxopt still parses and prints back unchanged.
  What an opcode *means* (is it a load, which state space, how many
  destinations) lives in :mod:`ptxopt.ptx.opcodes`, never in these classes.
* **Leaves are frozen.** Instructions, operands, labels and declarations are
  immutable, so a module copy only rebuilds the containers (functions and
  ``{ }`` blocks) and shares every leaf. Passes build new instructions with
  :func:`dataclasses.replace` instead of mutating, which makes copying a module
  an order of magnitude cheaper than re-parsing it.
* **Equality is structural.** ``parse(emit(m)) == m`` is the round-trip
  contract, so source positions (``line``) are excluded from comparisons.
* **Declarations keep their attribute words in order.** ``.param .u64 .ptr
  .global .align 16 p`` is stored as the word tuple plus the name; the
  properties below read the space, type and alignment out of it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator, Union

from ptxopt.ptx.ptxwords import STATE_SPACES, TYPE_BITS, is_float_literal, literal_value, parse_int  # noqa: F401  (ir.parse_int)

# --------------------------------------------------------------------------
# Operands
# --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Reg:
    """A register or special register (``%r1``, ``%p2``, ``%tid.x``)."""

    name: str

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True, slots=True)
class Imm:
    """An immediate, kept as written (``16``, ``-4``, ``0x1F``, ``0f3F800000``)."""

    text: str

    def __str__(self) -> str:
        return self.text

    @property
    def is_float(self) -> bool:
        return is_float_literal(self.text)

    def value(self) -> int | float:
        """Numeric value: int for integer literals, float for float literals."""
        return literal_value(self.text)


@dataclass(frozen=True, slots=True)
class ConstExpr(Imm):
    """A constant expression kept as written (``(1+2)*3``, ``1<<4``, ``~0x0F``),
    printed back verbatim; :meth:`value` evaluates it (:mod:`ptxopt.ptx.constexpr`).
    A subclass of :class:`Imm` so value consumers need no special case."""

    @property
    def is_float(self) -> bool:
        return isinstance(self.value(), float)

    def value(self) -> int | float:
        from ptxopt.ptx.constexpr import evaluate

        return evaluate(self.text)


@dataclass(frozen=True, slots=True)
class Sym:
    """A symbol: label, function, variable or parameter name, ``_`` sink; with
    an optional byte offset (``arr+8``)."""

    name: str
    offset: int = 0
    index: int | None = None  # array-element operand ``table[1]``

    def __str__(self) -> str:
        s = self.name if self.index is None else f"{self.name}[{self.index}]"
        return s if not self.offset else f"{s}{_signed(self.offset)}"


@dataclass(frozen=True, slots=True)
class Neg:
    """A negated predicate operand ``!%p``."""

    reg: Reg

    def __str__(self) -> str:
        return f"!{self.reg.name}"


@dataclass(frozen=True, slots=True)
class Pair:
    """A pair destination ``%p|%q`` (setp, shfl), or a vector with a predicate
    ``{%f1, %f2, %f3, %f4}|%p`` (tex)."""

    first: "Reg | Vec"
    second: Reg

    def __str__(self) -> str:
        return f"{self.first}|{self.second.name}"


@dataclass(frozen=True, slots=True)
class Vec:
    """A vector operand ``{%f1, %f2}``; items may be registers, immediates or ``_``."""

    items: tuple["Operand", ...]

    def __str__(self) -> str:
        return "{" + ", ".join(str(i) for i in self.items) + "}"


@dataclass(frozen=True, slots=True)
class Addr:
    """A memory address ``[base+offset]``. ``base`` is a register, a symbol or
    an immediate (absolute address); ``extra`` holds further comma-separated
    items (texture coordinates ``[tex, {%f1, %f2}]``)."""

    base: Union[Reg, Sym, Imm]
    offset: int = 0
    extra: tuple["Operand", ...] = ()
    # ``[%SP+0]`` as written: ptxas in debug mode (``.target ..., debug`` / -O0)
    # emits an add for it but a move for ``[%SP]``, so the printer keeps it.
    plus_zero: bool = False

    def __str__(self) -> str:
        inner = str(self.base) + (_signed(self.offset) if self.offset else "+0" if self.plus_zero else "")
        for e in self.extra:
            inner += ", " + str(e)
        return f"[{inner}]"


@dataclass(frozen=True, slots=True)
class ParenList:
    """A parenthesised list, as in call arguments ``(param0, param1)``."""

    items: tuple["Operand", ...]

    def __str__(self) -> str:
        return "(" + ", ".join(str(i) for i in self.items) + ")"


Operand = Union[Reg, Imm, ConstExpr, Sym, Neg, Pair, Vec, Addr, ParenList]


def _signed(n: int) -> str:
    # nvcc writes negative offsets as "+-4"; ptxas accepts it and it keeps the
    # "+" visible, so that is the canonical form.
    return f"+{n}"


# --------------------------------------------------------------------------
# Statements
# --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Instruction:
    """``@guard opcode.mod1.mod2 operands;``

    ``guard`` is the predicate register name or None; ``guard_neg`` is True for
    ``@!%p``. ``modifiers`` are the dot-separated words after the opcode, in
    order and without dots.
    """

    opcode: str
    modifiers: tuple[str, ...] = ()
    operands: tuple[Operand, ...] = ()
    guard: str | None = None
    guard_neg: bool = False
    line: int = field(default=0, compare=False, repr=False)
    # The operand facts (:func:`ptxopt.ptx.operand_facts.facts`), computed on first
    # use. Not an ``__init__`` field, so ``dataclasses.replace`` and the
    # constructor always start empty: an edited instruction is a new object and
    # can never carry the facts of the one it replaced.
    _facts: object = field(default=None, init=False, compare=False, repr=False)

    # Pickles (worker processes, caches) carry the instruction, not its facts:
    # the receiver recomputes them on first use.
    def __getstate__(self):
        return (self.opcode, self.modifiers, self.operands, self.guard, self.guard_neg, self.line)

    def __setstate__(self, state) -> None:
        for name, value in zip(_INSTRUCTION_STATE, state):
            object.__setattr__(self, name, value)
        object.__setattr__(self, "_facts", None)

    @property
    def full_opcode(self) -> str:
        if not self.modifiers:
            return self.opcode
        return self.opcode + "." + ".".join(self.modifiers)

    def has(self, modifier: str) -> bool:
        return modifier in self.modifiers

    def with_modifiers(self, modifiers: tuple[str, ...]) -> "Instruction":
        # ``replace`` spelt out (a pass may rewrite thousands of loads, and
        # ``dataclasses.replace`` introspects the fields each time); every
        # ``__init__`` field is passed (tests/ptx/test_operand_facts.py checks that)
        return Instruction(self.opcode, tuple(modifiers), self.operands, self.guard, self.guard_neg, self.line)


_INSTRUCTION_STATE = ("opcode", "modifiers", "operands", "guard", "guard_neg", "line")


@dataclass(frozen=True, slots=True)
class Label:
    name: str
    line: int = field(default=0, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class DeclItem:
    """One declared name: ``%r<100>`` (count=100), ``smem[128]`` (dims=("128",)),
    ``dyn[]`` (dims=("",)), or a plain name / string argument."""

    name: str
    count: int | None = None
    dims: tuple[str, ...] = ()
    # The initialiser of a declarator that is *not* the last one
    # (``.global .u32 a = 1, b = 2;``); the last one's is :attr:`Decl.init`.
    init: "Init | None" = None

    def __str__(self) -> str:
        s = self.name
        if self.count is not None:
            s += f"<{self.count}>"
        for d in self.dims:
            s += f"[{d}]"
        if self.init is not None:
            s += " = " + format_init(self.init)
        return s

    def names(self) -> list[str]:
        """Every register name this item declares (``%r<3>`` -> %r0, %r1, %r2)."""
        if self.count is None:
            return [self.name]
        return [f"{self.name}{i}" for i in range(self.count)]


# Initialiser values: a scalar token text, or a nested brace list.
Init = Union[str, tuple["Init", ...]]


def format_init(init: Init) -> str:
    if isinstance(init, str):
        return init
    return "{" + ", ".join(format_init(i) for i in init) + "}"


@dataclass(frozen=True, slots=True)
class Decl:
    """A declaration or a directive statement that ends in ``;``.

    ``attrs`` are the words before the names, in order (``.reg``, ``.b32``,
    ``.align``, ``16`` ...). ``.pragma "nounroll";`` and ``.branchtargets``
    are Decls too: the shape is the same and printing is lossless.
    """

    attrs: tuple[str, ...]
    items: tuple[DeclItem, ...] = ()
    init: Init | None = None
    line: int = field(default=0, compare=False, repr=False)

    @property
    def space(self) -> str | None:
        """State space word (``.reg``, ``.param``, ``.shared``...), if any."""
        for a in self.attrs:
            if a in STATE_SPACES:
                return a
        return None

    @property
    def dtype(self) -> str | None:
        for a in self.attrs:
            if a[1:] in TYPE_BITS:
                return a
        return None

    @property
    def align(self) -> int | None:
        for i, a in enumerate(self.attrs[:-1]):
            if a == ".align":
                return parse_int(self.attrs[i + 1])
        return None

    @property
    def is_ptr(self) -> bool:
        return ".ptr" in self.attrs

    @property
    def name(self) -> str:
        return self.items[0].name if self.items else ""


@dataclass(frozen=True, slots=True)
class Loc:
    """A ``.loc`` debug line directive, kept as written (it has no ``;``)."""

    text: str
    line: int = field(default=0, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class Raw:
    """Text kept verbatim: ``.file`` lines, ``.section .debug_*`` blocks,
    ``.callprototype`` statements. ptxopt never rewrites these."""

    text: str
    line: int = field(default=0, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class Comment:
    """A ``//`` or ``/* */`` comment; ``trailing`` comments print on the line of
    the statement before them."""

    text: str
    trailing: bool = False
    line: int = field(default=0, compare=False, repr=False)


@dataclass(slots=True)
class Block:
    """A ``{ }`` scope: function bodies and nested scopes (call sequences)."""

    items: list["Statement"]
    line: int = field(default=0, compare=False, repr=False)

    def copy(self) -> "Block":
        return Block([i.copy() if type(i) is Block else i for i in self.items], self.line)


Statement = Union[Instruction, Label, Decl, Loc, Raw, Comment, Block]


@dataclass(frozen=True, slots=True)
class PerfDirective:
    """A function-header directive: ``.maxnreg 64``, ``.maxntid 256, 1, 1``,
    ``.noreturn``, ``.pragma "nounroll";`` (args kept as text)."""

    name: str
    args: tuple[str, ...] = ()


@dataclass(slots=True)
class Function:
    """An ``.entry`` or ``.func`` definition (``body`` set) or declaration."""

    kind: str  # ".entry" or ".func"
    name: str
    linkage: tuple[str, ...] = ()
    params: tuple[Decl, ...] | None = None
    ret_params: tuple[Decl, ...] | None = None
    directives: tuple[PerfDirective, ...] = ()
    body: Block | None = None
    line: int = field(default=0, compare=False, repr=False)
    # ``.attribute(.unified(...))`` written after ``.func``/``.entry``
    attribute: str | None = None

    @property
    def is_entry(self) -> bool:
        return self.kind == ".entry"

    def copy(self) -> "Function":
        return Function(
            self.kind, self.name, self.linkage, self.params, self.ret_params,
            self.directives, self.body.copy() if self.body is not None else None, self.line,
            self.attribute,
        )

    def directive(self, name: str) -> PerfDirective | None:
        for d in self.directives:
            if d.name == name:
                return d
        return None

    def param_names(self) -> list[str]:
        """The names of the parameters, in order (a declaration may declare several)."""
        return [it.name for d in self.params or () for it in d.items]

    def instructions(self) -> Iterator[Instruction]:
        """All instructions of the body in textual order, nested scopes included."""
        if self.body is None:
            return iter(())
        return iter_instructions(self.body)


TopLevel = Union[Function, Decl, Raw, Comment]


@dataclass(slots=True)
class Module:
    """A PTX module: header directives and the top-level items in order."""

    version: str
    target: tuple[str, ...]
    address_size: int | None = None
    items: list[TopLevel] = field(default_factory=list)
    header_comments: tuple[Comment, ...] = ()

    def copy(self) -> "Module":
        """A copy sharing every immutable leaf; containers are new."""
        return Module(
            self.version, self.target, self.address_size,
            [i.copy() if type(i) is Function else i for i in self.items],
            self.header_comments,
        )

    @property
    def functions(self) -> list[Function]:
        return [i for i in self.items if type(i) is Function]

    @property
    def entries(self) -> list[Function]:
        return [f for f in self.functions if f.kind == ".entry" and f.body is not None]

    def function(self, name: str) -> Function:
        for f in self.functions:
            if f.name == name and f.body is not None:
                return f
        raise KeyError(name)

    def pick_entry(self, name: str | None = None, purpose: str = "") -> Function:
        """The kernel called ``name``, or the only one when ``name`` is None.

        Raises :class:`LookupError` naming the kernels there are; ``purpose``
        (``"to instrument"``) finishes its sentences. Callers re-raise it as
        their own error type."""
        entries = self.entries
        if name is None and len(entries) == 1:
            return entries[0]
        for f in entries:
            if f.name == name:
                return f
        names = ", ".join(f.name for f in entries) or "none"
        if name is None:
            raise LookupError(f"the module has {len(entries)} kernels ({names}); "
                              f"name {'the one ' + purpose if purpose else 'one'}")
        raise LookupError(f"no kernel named {name!r}{' ' + purpose if purpose else ''} (kernels: {names})")

    @property
    def arch(self) -> str:
        return self.target[0] if self.target else ""

    @property
    def version_tuple(self) -> tuple[int, int]:
        major, _, minor = self.version.partition(".")
        return int(major), int(minor or 0)


def iter_instructions(block: Block) -> Iterator[Instruction]:
    stack = [iter(block.items)]
    while stack:
        for item in stack[-1]:
            t = type(item)
            if t is Instruction:
                yield item
            elif t is Block:
                stack.append(iter(item.items))
                break
        else:
            stack.pop()


def instruction_slots(block: Block) -> Iterator[tuple[list, int, Instruction]]:
    """``(items, index, instruction)`` for every instruction in textual order,
    nested scopes included, so a pass can rewrite in place with
    ``items[index] = new`` (replacing, not inserting, while iterating)."""
    stack = [(block.items, 0)]
    while stack:
        items, i = stack.pop()
        while i < len(items):
            s = items[i]
            t = type(s)
            if t is Instruction:
                yield items, i, s
            elif t is Block:
                stack.append((items, i + 1))
                stack.append((s.items, 0))
                break
            i += 1


def iter_decls(block: Block) -> Iterator[Decl]:
    """Every declaration in ``block``, nested scopes included, in textual order."""
    for s in block.items:
        t = type(s)
        if t is Decl:
            yield s
        elif t is Block:
            yield from iter_decls(s)
