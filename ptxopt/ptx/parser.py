"""PTX text -> IR, with the Lark LALR grammar in ``grammar/ptx.lark``.

The IR is built inside the LALR reduction callbacks (no parse tree is ever
made), which is what makes parsing fast enough to sit in a search loop. Most
operands are single tokens (registers, numbers, symbols) and are converted in
the instruction callback; only compound operands get callbacks of their own.

Comments are %ignore'd by the grammar but collected by a lexer callback and
put back as :class:`~ptxopt.ptx.ir.Comment` statements by position (see
:mod:`ptxopt.ptx.comments`).
"""

from __future__ import annotations

import importlib.util
import re
import threading
from dataclasses import replace
from pathlib import Path

from typing import TYPE_CHECKING

from ptxopt.ptx.comments import place_comments
from ptxopt.ptx.ir import (
    Addr, Block, ConstExpr, Decl, DeclItem, Function, Imm, Instruction, Label, Loc, Module,
    Neg, Pair, ParenList, PerfDirective, Raw, Reg, Sym, Vec, iter_decls, parse_int,
)
from ptxopt.ptx.body_parser import EXPR_NUMBER
from ptxopt.ptx.ptxwords import GRAMMAR_PATH  # parser.GRAMMAR_PATH: callers read the grammar's path here

if TYPE_CHECKING:
    from lark import Lark

# Lark (and lark-cython) are imported on the first parse, not with this module:
# ``ptxopt --help`` and the commands that never parse do not pay ~40 ms for it.
_HAS_LARK_CYTHON = importlib.util.find_spec("lark_cython") is not None

#: Which LALR engine parses: "lark-cython" when installed (the Cython build of
#: Lark's LALR engine, by Lark's author: ~2x faster), else "lark".
BACKEND = "lark-cython" if _HAS_LARK_CYTHON else "lark"
_TOK: type = type(None)  # the engine's token class, set by _get_parser()
MAX_NESTING = 100  # deeper `{ }` nesting is refused (and never seen in real PTX)


class ParseError(Exception):
    """A syntax error at ``line``:``column`` (1-based) of the input."""

    def __init__(self, message: str, line: int = 1, column: int = 1, filename: str = "<input>"):
        super().__init__(message)
        self.message = message
        self.line = line
        self.column = column
        self.filename = filename

    def __str__(self) -> str:
        return f"{self.filename}:{self.line}:{self.column}: error: {self.message}"


class _Builder:
    """LALR callbacks: each method receives every child of one reduction
    (the parser keeps all tokens, so punctuation is present and positions
    are fixed per alternative).

    ``pos`` records where every statement, block and top-level item starts
    (keyed by object id) and ``spans`` where every block's braces are; both
    only serve to place comments. Tokens are read through ``.value`` so the
    same callbacks work with Lark's and lark-cython's token classes.
    """

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.comments: list = []
        self.pos: dict[int, tuple[int, int]] = {}
        self.spans: list = []
        self.regs: dict[str, Reg] = {}
        self.depth: dict[int, int] = {}
        self.bare_regs = False  # a `.reg` declared a name without `%` (inline asm style)

    # -- operands ----------------------------------------------------------
    def _reg(self, tok) -> Reg:
        v = tok.value
        r = self.regs.get(v)
        if r is None:
            r = self.regs[v] = Reg(v)
        return r

    def _conv(self, x):
        t = type(x)
        if t is not _TOK:
            return x
        ty = x.type
        if ty == "REG":
            return self._reg(x)
        if ty == "NUMBER":
            return Imm(x.value)
        return Sym(x.value)

    def ops(self, c):
        # The hottest callback (one call per operand): conversion is inlined.
        if len(c) == 1:
            lst, x = [], c[0]
        else:
            lst, x = c[0], c[2]
        t = type(x)
        if t is _TOK:
            ty = x.type
            v = x.value
            if ty == "REG":
                r = self.regs.get(v)
                if r is None:
                    r = self.regs[v] = Reg(v)
                x = r
            elif ty == "NUMBER":
                x = Imm(v)
            else:
                x = Sym(v)
        elif t is _Expr:
            # `-4` stays a plain immediate; anything else is an expression.
            x = Imm(x) if x[0] == "-" and _NUMBER.fullmatch(x, 1) else ConstExpr(str(x))
        lst.append(x)
        return lst

    # -- constant expressions: kept as text (see ptxopt/ptx/constexpr.py) ----------
    def cunary(self, c):
        if len(c) == 1:
            return c[0]
        return _Expr("".join(_text(x) for x in c))

    def cexpr(self, c):
        if len(c) == 1:
            return c[0]
        # Binary operators are spaced: `17%5` would lex `%5` as a register.
        return _Expr(" ".join(_text(x) for x in c))

    def indexed(self, c):
        return Sym(c[0].value, 0, _int(c[2]))

    plist_ops = ops

    def not_pred(self, c):  # `!p` is always a predicate register, `%` or not
        return Neg(self._reg(c[1]))

    def pair(self, c):
        first = c[0] if type(c[0]) is Vec else self._reg(c[0])
        return Pair(first, self._reg(c[2]))

    def sym_off(self, c):
        return Sym(c[0].value, _offset(c[1], c[2]))

    def vec(self, c):
        items = tuple(c[1]) if len(c) == 3 else ()
        for i in items:
            if type(i) is Vec:
                raise ParseError("vector operands cannot be nested", c[0].line, c[0].column)
        return Vec(items)

    def paren(self, c):
        return ParenList(tuple(c[1]) if len(c) == 3 else ())

    def addr(self, c):
        base = self._conv(c[1])
        sep = c[2].type
        if sep == "RSQB":
            return Addr(base)
        if sep == "COMMA":
            return Addr(base, 0, tuple(c[3]))
        off = _offset(c[2], c[3])
        return Addr(base, off, (), off == 0)

    # -- statements ----------------------------------------------------------
    def instruction(self, c):
        first = c[0]
        split = ()
        if type(c[-2]) is _Mods or (len(c) > 3 and type(c[-3]) is _Mods):  # `mov .u32 ...`
            c = list(c)
            k = next(i for i, x in enumerate(c) if type(x) is _Mods)
            split = tuple(t.value[1:] for t in c.pop(k))
        if first.type == "GUARD":
            g = first.value
            if " " in g or "\t" in g:  # `@ !%p` is legal too
                g = "".join(g.split())
            neg = g[1] == "!"
            guard = g[2:] if neg else g[1:]
            word = c[1]
            ops = c[2] if len(c) == 4 else ()
        else:
            guard, neg, word = None, False, first
            ops = c[1] if len(c) == 3 else ()
        opcode, *mods = word.value.split(".")
        mods += split
        ins = Instruction(opcode, tuple(mods), tuple(ops), guard, neg, first.line)
        self.pos[id(ins)] = (first.line, first.column)
        return ins

    def mods(self, c):
        if len(c) == 1:
            return _Mods(c)
        lst = c[0]
        lst.append(c[1])
        return lst

    def label(self, c):
        t = c[0]
        lab = Label(t.value, t.line)
        self.pos[id(lab)] = (t.line, t.column)
        return lab

    def stmts(self, c):
        if len(c) == 1:
            return [self._stmt(c[0])]
        lst = c[0]
        lst.append(self._stmt(c[1]))
        return lst

    def _stmt(self, x):
        if type(x) is not _TOK:
            return x
        obj = (Loc if x.type == "LOC" else Raw)(x.value.rstrip(), x.line)
        self.pos[id(obj)] = (x.line, x.column)
        return obj

    def block(self, c):
        lb, rb = c[0], c[-1]
        items = c[1] if len(c) == 3 else []
        nested = max((self.depth.get(id(b), 0) for b in items if type(b) is Block), default=0)
        if nested + 1 > MAX_NESTING:
            raise ParseError(f"blocks nested deeper than {MAX_NESTING} levels", lb.line, lb.column)
        blk = Block(items, lb.line)
        self.depth[id(blk)] = nested + 1
        self.pos[id(blk)] = (lb.line, lb.column)
        self.spans.append(((lb.line, lb.column), (rb.line, rb.column), items))
        return blk

    # -- declarations ----------------------------------------------------------
    def attrs(self, c):
        if len(c) == 1:
            return _Attrs(c)
        lst = c[0]
        lst.append(c[1])
        return lst

    def ditems(self, c):
        if len(c) == 1:
            return [c[0]]
        lst = c[0]
        if len(c) == 5:  # ditems "=" init "," ditem: the init belongs to the last one so far
            lst[-1] = replace(lst[-1], init=c[2])
        lst.append(c[-1])
        return lst

    def ditem(self, c):
        first = c[0]
        if type(first) is DeclItem:  # ditem "[" NUMBER? "]"
            dim = c[2].value if len(c) == 4 else ""
            return DeclItem(first.name, first.count, first.dims + (dim,))
        if len(c) == 1:
            return DeclItem(first.value)
        return DeclItem(first.value, _int(c[2]))

    def decl(self, c):
        attrs = c[0]
        items = tuple(c[1]) if len(c) > 2 else ()
        init = c[3] if len(c) == 5 else None
        a0 = attrs[0]
        d = Decl(tuple(a.value for a in attrs), items, init, a0.line)
        if a0.value == ".reg" and any(i.name[:1] != "%" for i in items):
            self.bare_regs = True
        self.pos[id(d)] = (a0.line, a0.column)
        return d

    def init(self, c):
        if type(c[0]) is _TOK and c[0].type == "LBRACE":
            items = tuple(c[1])
            depth = 1 + max((self.depth.get(id(i), 0) for i in items if type(i) is tuple), default=0)
            if depth > MAX_NESTING:
                raise ParseError(f"initialisers nested deeper than {MAX_NESTING} levels",
                                 c[0].line, c[0].column)
            self.depth[id(items)] = depth
            return items
        if len(c) == 3 and type(c[1]) is _TOK and c[1].value == "=":  # filter_mode = linear
            return f"{c[0].value} = {c[2].value}"
        return "".join(_text(x) for x in c)

    def ilist(self, c):
        if len(c) == 1:
            return [c[0]]
        lst = c[0]
        lst.append(c[2])
        return lst

    # -- functions -------------------------------------------------------------
    def param(self, c):
        return Decl(tuple(a.value for a in c[0]), (c[1],), None, c[0][0].line)

    def plist(self, c):
        if len(c) == 1:
            return [c[0]]
        lst = c[0]
        lst.append(c[2])
        return lst

    def params(self, c):
        return _Params(c[1] if len(c) == 3 else ())

    def nums(self, c):
        if len(c) == 1:
            return [c[0].value]
        lst = c[0]
        lst.append(c[2].value)
        return lst

    def perf(self, c):
        if len(c) == 1:
            return PerfDirective(c[0].value)
        arg = c[1]
        args = (arg.value,) if type(arg) is _TOK else tuple(arg)
        return PerfDirective(c[0].value, args)

    def perfs(self, c):
        if len(c) == 1:
            return _Perfs(c)
        lst = c[0]
        lst.append(c[1])
        return lst

    def fhead(self, c):
        linkage: tuple[str, ...] = ()
        first = c[0]
        i = 0
        if type(first) is _Attrs:
            linkage = tuple(a.value for a in first)
            first = first[0]
            i = 1
        kind = c[i].value
        name, ret, params, directives, attribute = None, None, None, (), None
        for x in c[i + 1:]:
            t = type(x)
            if t is _TOK:
                if x.type == "ATTRIBUTE":
                    attribute = x.value
                else:
                    name = x.value
            elif t is _Params:
                if name is None:
                    ret = x.items
                else:
                    params = x.items
            elif t is _Perfs:
                directives = tuple(x)
        fn = Function(kind, name, linkage, params, ret, directives, None, first.line, attribute)
        self.pos[id(fn)] = (first.line, first.column)
        return fn

    def function(self, c):
        fn = c[0]
        if type(c[1]) is Block:
            fn.body = c[1]
        return fn

    # -- module ----------------------------------------------------------------
    def targets(self, c):
        if len(c) == 1:
            return [c[0].value]
        lst = c[0]
        lst.append(c[2].value)
        return lst

    def tops(self, c):
        x = c[-1]
        if type(x) is _TOK:
            raw = Raw(x.value.rstrip(), x.line)
            self.pos[id(raw)] = (x.line, x.column)
            x = raw
        if len(c) == 1:
            return [x]
        lst = c[0]
        lst.append(x)
        return lst

    def header(self, c):
        asize = _int(c[5]) if len(c) == 6 else None
        return (c[1].value, tuple(c[3]), asize, (c[0].line, c[0].column))

    def start(self, c):
        version, target, asize, header_pos = c[0]
        items = c[1] if len(c) == 2 else []
        return Module(version, target, asize, items), header_pos


class _Expr(str):
    """Text of a constant expression, on its way to an operand or offset."""


_NUMBER = EXPR_NUMBER  # what makes `-4` an immediate rather than an expression (shared with the fast path)


def _text(x) -> str:
    return x if type(x) is _Expr else x.value


def _offset(sign, x) -> int:
    """A byte offset written after ``+`` or ``-``: ``+16``, ``+-4``, ``-4+2``, ``+4*2``."""
    if type(x) is _TOK:
        v = _int(x)
        return -v if sign.type == "MINUS" else v
    from ptxopt.ptx.constexpr import ConstExprError, evaluate

    text = ("-" if sign.type == "MINUS" else "") + x
    try:
        v = evaluate(text)
    except ConstExprError as e:
        raise ParseError(str(e), sign.line, sign.column) from None
    if isinstance(v, float):
        raise ParseError(f"offset {text!r} is not an integer", sign.line, sign.column)
    return v


def _int(tok) -> int:
    """An integer token's value, or a ParseError at the token (``1.5`` where
    an integer is required, or more digits than Python converts)."""
    try:
        return parse_int(tok.value)
    except ValueError:
        raise ParseError(f"expected an integer, found {tok.value[:40]!r}", tok.line, tok.column) from None


class _Attrs(list):
    """Attribute tokens of a declaration or function header."""


class _Mods(list):
    """``.modifier`` tokens written apart from their opcode (``mov .u32``)."""


class _Perfs(list):
    """Performance directives of a function header."""


class _Params:
    __slots__ = ("items",)

    def __init__(self, items):
        self.items = tuple(items)


# --------------------------------------------------------------------------
# The parser object: built once per process (Lark grammar analysis takes
# ~100 ms), guarded by a lock because the callbacks hold per-parse state.
# --------------------------------------------------------------------------

_lock = threading.Lock()
_parser: Lark | None = None
_builder: _Builder | None = None


def _get_parser() -> tuple[Lark, _Builder]:
    global _parser, _builder, _TOK
    if _parser is None:
        from lark import Lark, Token

        b = _Builder()
        plugins = {}
        if BACKEND == "lark-cython":
            import lark_cython

            plugins = lark_cython.plugins
            _TOK = lark_cython.Token
        else:
            _TOK = Token
        _parser = Lark(
            GRAMMAR_PATH.read_text(),
            parser="lalr",
            lexer="basic",
            transformer=b,
            keep_all_tokens=True,
            maybe_placeholders=False,
            propagate_positions=False,
            lexer_callbacks={"COMMENT": lambda tok: b.comments.append(tok) or tok},
            _plugins=plugins,
        )
        _builder = b
    return _parser, _builder


def expected_text(what: str, value) -> str:
    """The TypeError message of an API that takes PTX text and got ``value``."""
    hint = ("; decode it first (data.decode('utf-8')), or use ptxopt.parse_bytes() or ptxopt.parse_file()"
            if isinstance(value, (bytes, bytearray)) else "")
    return f"{what} takes the PTX text as str, not {type(value).__name__}{hint}"


_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.DOTALL)


def _first_too_deep(text: str) -> tuple[int, int] | None:
    """Where the first ``{`` opening level ``MAX_NESTING + 1`` is (line, column).

    The LALR callbacks see blocks innermost first, so the block they find too
    deep is ``MAX_NESTING`` levels *above* the innermost one -- near the end of
    a 100k-deep file, not where the nesting went past the limit. Comments do
    not count (blanked, newlines kept)."""
    blank = _COMMENT.sub(lambda m: re.sub(r"[^\n]", " ", m.group()), text)
    depth = 0
    for m in re.finditer(r"[{}]", blank):
        if m.group() == "{":
            depth += 1
            if depth > MAX_NESTING:
                line = blank.count("\n", 0, m.start()) + 1
                return line, m.start() - (blank.rfind("\n", 0, m.start()) + 1) + 1
        else:
            depth = max(0, depth - 1)
    return None


def parse(text: str, filename: str = "<input>") -> Module:
    """Parse PTX source into a :class:`Module`; raise :class:`ParseError`."""
    if not isinstance(text, str):
        raise TypeError(expected_text("parse()", text))
    from lark.exceptions import UnexpectedInput, VisitError

    parser, b = _get_parser()
    with _lock:
        got = _parse_with_fast_bodies(text, parser, b) if FAST_BODIES else None
        if got is not None:
            module, header_pos, comments = got
            if comments:
                place_comments(module, header_pos, comments, b.pos, b.spans)
            if b.bare_regs:
                resolve_bare_registers(module)
            return module
        b.reset()
        try:
            module, header_pos = parser.parse(text)
        except UnexpectedInput as e:
            raise _syntax_error(e, text, filename) from None
        except VisitError as e:  # an exception raised inside a callback
            orig = e.orig_exc
            if isinstance(orig, ParseError):
                orig.filename = filename
                if "nested deeper than" in orig.message:
                    orig.line, orig.column = _first_too_deep(text) or (orig.line, orig.column)
                raise orig from None
            raise
        except ParseError as e:
            e.filename = filename
            if "nested deeper than" in e.message:
                e.line, e.column = _first_too_deep(text) or (e.line, e.column)
            raise
        if b.comments:
            place_comments(module, header_pos, b.comments, b.pos, b.spans)
        if b.bare_regs:
            resolve_bare_registers(module)
        return module


#: Read function bodies with :mod:`ptxopt.ptx.body_parser` (Lark parses the rest
#: and whatever that gives up); False: Lark parses everything (the definition).
FAST_BODIES = True


def _parse_with_fast_bodies(text: str, parser, b: _Builder):
    """``(module, header_pos, comments)`` with the bodies the fast path read
    put into the blocks Lark made for them, or None: nothing read fast, or
    Lark found an error (parsed again whole, for Lark's own message), or
    Lark's blocks are not where the fast path put the bodies."""
    from ptxopt.ptx.body_parser import BodyReader, blank

    reader = BodyReader()
    bodies = reader.split(text)
    if not bodies:
        return None
    b.reset()
    b.regs = reader.regs  # one Reg per name across the whole module, as Lark's callbacks keep it
    try:
        module, header_pos = parser.parse(blank(text, bodies))
    except Exception:  # any error: the whole text goes to Lark, which reports it
        return None
    function_bodies = {id(fn.body.items) for fn in module.items
                       if type(fn) is Function and fn.body is not None}
    by_open = {span[0]: span for span in b.spans}
    for _, _, lb, rb, _items in bodies:
        span = by_open.get(lb)
        if span is None or span[1] != rb or span[2] or id(span[2]) not in function_bodies:
            return None
    for _, _, lb, _, items in bodies:
        by_open[lb][2].extend(items)
    b.bare_regs = b.bare_regs or reader.bare_regs
    comments = b.comments
    if reader.comments:
        comments = sorted(comments + reader.comments, key=_token_position)
    if comments:  # positions only serve to place comments (the smaller dict merged into the larger)
        reader.pos.update(b.pos)
        b.pos = reader.pos
        b.spans.extend(reader.spans)
    return module, header_pos, comments


def _token_position(tok) -> tuple[int, int]:
    return tok.line, tok.column


def resolve_bare_registers(module: Module) -> None:
    """Turn symbol operands that name a ``%``-less register into :class:`Reg`.

    PTX lets a register be declared without ``%`` (``.reg .pred p;``, common
    in inline asm), and then ``p`` is syntactically just a name. The parser
    cannot tell it from a label or variable until it has seen the function's
    declarations, so this runs after parsing, per function, and only when
    such a declaration exists.
    """
    for fn in module.functions:
        if fn.body is None:
            continue
        names = {
            n
            for d in iter_decls(fn.body)
            if d.attrs[:1] == (".reg",)
            for item in d.items
            if item.name[:1] != "%"
            for n in item.names()
        }
        if names:
            _rewrite_syms(fn.body, names)


def _rewrite_syms(block: Block, names: set[str]) -> None:
    def fix(o):
        t = type(o)
        if t is Sym and o.offset == 0 and o.name in names:
            return Reg(o.name)
        if t is Vec:
            return Vec(tuple(fix(i) for i in o.items))
        if t is ParenList:
            return ParenList(tuple(fix(i) for i in o.items))
        if t is Addr:
            return replace(o, base=fix(o.base), extra=tuple(fix(i) for i in o.extra))
        return o

    items = block.items
    for i, s in enumerate(items):
        if type(s) is Instruction:
            ops = tuple(fix(o) for o in s.operands)
            if ops != s.operands:
                items[i] = replace(s, operands=ops)
        elif type(s) is Block:
            _rewrite_syms(s, names)


def parse_bytes(data: bytes, filename: str = "<input>") -> Module:
    """Decode and parse; binary or non-UTF-8 input is a ParseError, not a crash."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"parse_bytes() takes bytes, not {type(data).__name__}"
                        + ("; use ptxopt.parse() for text" if isinstance(data, str) else ""))
    data = bytes(data)
    if b"\x00" in data[:65536]:
        raise ParseError("not a text file (it contains NUL bytes)", 1, 1, filename)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        col = e.start - (data.rfind(b"\n", 0, e.start) + 1) + 1
        raise ParseError(f"invalid UTF-8 byte 0x{data[e.start]:02x}", line, col, filename) from None
    return parse(text, filename)


def parse_file(path: str | Path) -> Module:
    p = Path(path)
    return parse_bytes(p.read_bytes(), str(path))


# --------------------------------------------------------------------------
# Error messages
# --------------------------------------------------------------------------

_TERMINAL_NAMES = {
    "VERSION": "'.version'", "TARGET": "'.target'", "ADDRESS_SIZE": "'.address_size'",
    "ENTRY": "'.entry'", "FUNC": "'.func'", "LOC": "'.loc'", "FILE": "'.file'",
    "SECTION": "'.section'", "CALLPROTO": "'.callprototype'", "DIRECTIVE": "a directive",
    "ATTRIBUTE": "'.attribute(...)'",
    "GUARD": "a guard predicate", "REG": "a register", "WORD": "an identifier or opcode",
    "NUMBER": "a number", "STRING": "a string", "LBRACE": "'{'", "RBRACE": "'}'",
    "MINUS": "'-'", "SEMICOLON": "';'", "SEMI": "';'", "COMMA": "','", "COLON": "':'", "LPAR": "'('",
    "RPAR": "')'", "LSQB": "'['", "RSQB": "']'", "MORETHAN": "'>'", "LESSTHAN": "'<'",
    "PLUS": "'+'", "EQUAL": "'='", "BANG": "'!'", "VBAR": "'|'", "$END": "end of input",
}


def _terminal_name(name: str) -> str:
    if name in _TERMINAL_NAMES:
        return _TERMINAL_NAMES[name]
    if _parser is not None:  # anonymous literals such as '<<' get generated names
        for t in _parser.terminals:
            if t.name == name and t.pattern.type == "str":
                return repr(t.pattern.value)
    return name


def _describe_expected(names) -> str:
    words = sorted({_terminal_name(n) for n in names})
    if not words:
        return "something else"
    if len(words) > 8:
        words = words[:8] + ["..."]
    return words[0] if len(words) == 1 else "one of " + ", ".join(words)


def _found(text: str, tok) -> str:
    if tok is None or tok.type == "$END":
        return "end of input"
    s = str(getattr(tok, "value", tok)).strip() or str(getattr(tok, "value", tok))
    if len(s) > 40:
        s = s[:37] + "..."
    return repr(s)


_exact_parser: Lark | None = None
EXACT_EXPECTED_LIMIT = 512_000  # bytes (~1 s of pure-Python parsing): above, keep LALR's wider set


def _exact_expected(text: str, e):
    """The terminals that are really acceptable where ``e`` happened.

    LALR merges lookaheads, so ``e.expected`` may list tokens that are valid
    only in sibling contexts (a ``]`` after an instruction operand, say).
    Lark's interactive parser can simulate each terminal, but lark-cython's
    cannot, so on the error path only the text is parsed again with
    pure-Python Lark (no callbacks) and its ``accepts()`` answers.
    """
    from lark import Lark
    from lark.exceptions import UnexpectedInput, UnexpectedToken

    global _exact_parser
    if len(text) > EXACT_EXPECTED_LIMIT:
        return e.expected
    if _exact_parser is None:
        _exact_parser = Lark(GRAMMAR_PATH.read_text(), parser="lalr", lexer="basic",
                             keep_all_tokens=True, maybe_placeholders=False)
    try:
        _exact_parser.parse(text)
    except UnexpectedToken as e2:
        if (e2.line, e2.column) == (e.line, e.column):
            try:
                return e2.interactive_parser.accepts() - {"$END"} or e.expected
            except Exception:  # simulation failed: the LALR set is still true
                return e.expected
    except UnexpectedInput:
        pass
    return e.expected


def _syntax_error(e, text: str, filename: str) -> ParseError:
    from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedToken

    if isinstance(e, UnexpectedToken):
        found = _found(text, e.token)
        at_end = e.token is None or e.token.type == "$END" or e.line in (None, -1)
        line, col = _end_pos(text) if at_end else (e.line, e.column)
        msg = f"expected {_describe_expected(_exact_expected(text, e))}, found {found}"
        return ParseError(msg, line, col, filename)
    if isinstance(e, UnexpectedCharacters):
        ch = text[e.pos_in_stream] if e.pos_in_stream < len(text) else ""
        msg = f"unexpected character {ch!r}"
        if e.allowed:
            msg += f"; expected {_describe_expected(e.allowed)}"
        return ParseError(msg, e.line, e.column, filename)
    if isinstance(e, UnexpectedEOF):
        line, col = _end_pos(text)
        return ParseError(f"unexpected end of input; expected {_describe_expected(e.expected)}", line, col, filename)
    return ParseError(str(e).splitlines()[0], getattr(e, "line", 1) or 1, getattr(e, "column", 1) or 1, filename)


def _end_pos(text: str) -> tuple[int, int]:
    line = text.count("\n") + 1
    col = len(text) - (text.rfind("\n") + 1) + 1
    return line, col
