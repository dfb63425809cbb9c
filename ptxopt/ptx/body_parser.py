"""The fast path of the parser: function bodies read a line at a time.

The Lark grammar (``grammar/ptx.lark``) stays the definition of PTX syntax;
this module only recognises the statements compilers actually write in a
function body, one per line -- ``@%p1 bra $L__BB0_2;``, ``ld.global.f32 %f1,
[%rd4+8];``, ``.reg .b32 %r<12>;``, labels, ``.loc`` lines, ``{ }`` scopes,
``//`` comments -- and builds exactly the IR the grammar's callbacks
(:class:`ptxopt.ptx.parser._Builder`) build for them. Anything else in a body
(a constant expression, a statement over two lines, a string, a ``/*``
comment, a token it is not sure Lark would cut the same way) makes it give
that body up, and Lark parses it as before.

How the two meet (:func:`ptxopt.ptx.parser.parse`): each body read here is
blanked out of the text -- newlines and the columns of its last line kept,
so every other token keeps its line and column -- and Lark parses what is
left; the body is then put into the empty block Lark made for it, after
checking that Lark saw a function body with exactly those braces. Any
syntax error, or any doubt, and the whole text is parsed by Lark alone, so
error messages are Lark's, unchanged. ``tests/ptx/test_body_parser.py`` checks
that both paths give the identical IR (line numbers and comments included)
on the whole corpus and on generated statements.

Why: Lark's LALR engine (even the Cython one) spent 0.2-0.5 of a ptxas
compile on parsing alone, the front end of every search step.
"""

from __future__ import annotations

import re

from ptxopt.ptx.ir import Addr, Block, Decl, DeclItem, Imm, Instruction, Label, Loc, Neg, Pair, ParenList, Reg, Sym, Vec
from ptxopt.ptx.ptxwords import parse_int

# The grammar's terminals, matched with ``.match`` (first alternative wins, as
# in Lark's lexer) and accepted only when they cover the whole piece of text.
_REG = re.compile(r"%[\w$]+(\.[\w$]+)?")
_WORD = re.compile(r"[A-Za-z_$][\w$]*(\.[\w$:]+)*")
_NAME = re.compile(r"[A-Za-z_$][\w$]*")  # a WORD without dots: nothing can follow it glued
_NUMBER = re.compile(
    r"0[fF][0-9a-fA-F]{8}(?![\w.])|0[dD][0-9a-fA-F]{16}(?![\w.])|0[xX][0-9a-fA-F]+U?|0[bB][01]+U?"
    r"|\d+\.\d*([eE][+-]?\d+)?|\d+[eE][+-]?\d+|[1-9]\d*U?|0[0-7]*U?")
_INT = re.compile(r"0[xX][0-9a-fA-F]+U?|0[bB][01]+U?|[1-9]\d*U?|0[0-7]*U?")  # integer NUMBERs
_DEC = re.compile(r"[1-9]\d{0,17}|0")  # small decimal integers
_GUARD = re.compile(r"@[ \t]*(![ \t]*)?%?[\w$]+")
_DIRECTIVE = re.compile(r"\.[A-Za-z_][\w$]*(::[\w$]+)*")
_KEYWORD = re.compile(r"\.(version|target|address_size|entry|func|loc|file|section|callprototype|attribute)\b")
# guard, opcode word, operands: one statement ending in its only `;` (a GUARD
# or WORD cannot be cut shorter and still be followed by a blank or `;`, so the
# backtracking match is the lexer's greedy one)
_INS = re.compile(r'(?:(@[ \t]*(?:![ \t]*)?%?[\w$]+)[ \t]+)?([A-Za-z_$][\w$]*(?:\.[\w$:]+)*)(?:[ \t]+([^;"]*?))?[ \t]*;')
_LOC = re.compile(r"\.loc\b[^\n/]*")
_DITEM = re.compile(r"(%[\w$]+|[A-Za-z_$][\w$]*)(?:<([1-9]\d{0,8}|0)>)?((?:\[(?:[1-9]\d*|0)?\])*)")
_PRAGMA = re.compile(r'\.pragma[ \t]+("[^"\\\n]*")[ \t]*;')
_WS = " \t\f\r"  # the grammar's WS, less the newline
_ODD = re.compile(r"[^\t\f\r\x20-\x7e]")
_ODD_TEXT = re.compile(r"[^\t\n\f\r\x20-\x7e]")


def _never(_text: str) -> None:
    return None
#: A number after a unary minus that keeps ``-N`` an :class:`Imm` (else a
#: ConstExpr): the parser's callbacks and this module both use it.
EXPR_NUMBER = re.compile(
    r"0[fF][0-9a-fA-F]{8}|0[dD][0-9a-fA-F]{16}|0[xX][0-9a-fA-F]+U?|0[bB][01]+U?"
    r"|\d+\.\d*([eE][+-]?\d+)?|\d+[eE][+-]?\d+|\d+U?"
)


class _Comment:
    """A comment as the lexer callback hands it over (``value``, ``line``, ``column``)."""

    __slots__ = ("column", "line", "value")
    type = "COMMENT"

    def __init__(self, value: str, line: int, column: int) -> None:
        self.value, self.line, self.column = value, line, column


class GiveUp(Exception):
    """This body is not for the fast path: Lark parses it."""


class BodyReader:
    """Reads bodies into IR with the parser's bookkeeping: ``regs`` (one
    :class:`Reg` per name, shared with Lark's callbacks), ``pos`` (where each
    statement starts, by object id), ``spans`` (nested blocks' braces),
    ``comments`` and ``bare_regs`` -- what :func:`ptxopt.ptx.comments.place_comments`
    and :func:`ptxopt.ptx.parser.resolve_bare_registers` need afterwards."""

    MAX_DEPTH = 50  # nested `{ }` inside one body; deeper ones go to Lark (and its limit)

    def __init__(self) -> None:
        self.regs: dict[str, Reg] = {}
        self.pos: dict[int, tuple[int, int]] = {}
        self.spans: list = []
        self.comments: list = []
        self.bare_regs = False
        self.seen: dict[str, object] = {}  # operand text -> operand
        self.odd_text = True

    # -- the text -----------------------------------------------------------------
    def split(self, text: str):
        """``(open_offset, close_offset, (line, col) of '{', (line, col) of '}', items)``
        for every function body read here; bodies it gave up are left out."""
        if "/*" in text:  # a block comment can hide or span anything: Lark reads it all
            return []
        self.odd_text = _ODD_TEXT.search(text) is not None  # else no line needs the check
        out = []
        lines = text.split("\n")
        offset = 0
        depth = 0  # brace lines seen outside the bodies read here (skip mode)
        i, n = 0, len(lines)
        while i < n:
            line = lines[i]
            code = _code(line)
            if code == "{" and depth == 0:
                got = self._body(lines, i, offset)
                if got is not None:
                    end_i, end_offset, item = got
                    out.append(item)
                    i, offset = end_i + 1, end_offset + len(lines[end_i]) + 1
                    continue
                depth = 1
            elif code == "{":
                depth += 1
            elif code == "}":
                depth = max(0, depth - 1)
            offset += len(line) + 1
            i += 1
        return out

    def _body(self, lines, first: int, offset: int):
        """Read the body whose ``{`` is alone on line index ``first`` (char
        offset ``offset``); None when it gives up (nothing is kept from it)."""
        mark = (len(self.spans), len(self.comments), self.bare_regs)
        try:
            got = self._read(lines, first, offset)
        except (GiveUp, ValueError, IndexError):
            got = None
        if got is None:
            del self.spans[mark[0]:]
            del self.comments[mark[1]:]
            self.bare_regs = mark[2]
            return None
        if len(self.comments) > mark[1]:  # comments to place among this body's statements
            _positions(got[2][4], self.pos)
        return got

    def _read(self, lines, first: int, offset: int):
        line = lines[first]
        col = line.index("{")
        open_pos = (first + 1, col + 1)
        open_off = offset + col
        self._comment_after(line, col + 1, first + 1)
        stack: list[tuple[list, tuple[int, int]]] = [([], open_pos)]
        items = stack[-1][0]
        offset += len(line) + 1
        comments = self.comments
        ins_match = _INS.fullmatch
        odd = _ODD.search if self.odd_text else _never
        operands = self._operands
        for i in range(first + 1, len(lines)):
            line = lines[i]
            code = line.lstrip(_WS)
            if not code:
                offset += len(line) + 1
                continue
            lineno = i + 1
            start = len(line) - len(code)
            cut = code.find("//")
            if cut >= 0:
                code = code[:cut]
                cut += start
            code = code.rstrip(_WS)
            if odd(code):  # non-ASCII or a control character: Lark's lexer decides
                raise GiveUp
            if not code:
                pass
            elif code[-1] == ";" and code[0] != ".":
                m = ins_match(code)
                if m is None:
                    raise GiveUp
                g, word, body = m.groups()
                if g is None:
                    guard, neg = None, False
                else:
                    if " " in g or "\t" in g:
                        g = "".join(g.split())
                    neg = g[1] == "!"
                    guard = g[2:] if neg else g[1:]
                opcode, *mods = word.split(".")
                obj = Instruction(opcode, tuple(mods), operands(body) if body else (), guard, neg, lineno)
                items.append(obj)
            elif code == "{":
                if len(stack) > self.MAX_DEPTH:
                    raise GiveUp
                stack.append(([], (lineno, start + 1)))
                items = stack[-1][0]
            elif code == "}":
                inner, lb = stack.pop()
                rb = (lineno, start + 1)
                if not stack:  # the body's own closing brace (what follows it is Lark's)
                    return i, offset, (open_off, offset + start, open_pos, rb, inner)
                blk = Block(inner, lb[0])
                self.spans.append((lb, rb, inner))
                items = stack[-1][0]
                items.append(blk)
            elif code[0] == ".":
                if code.startswith(".loc") and _LOC.match(code):
                    m = _LOC.match(line, start)
                    rest = line[m.end():]
                    if rest and not rest.startswith("//"):
                        raise GiveUp
                    obj = Loc(m.group().rstrip(), lineno)
                    items.append(obj)
                    if rest:
                        comments.append(_Comment(rest, lineno, m.end() + 1))
                    offset += len(line) + 1
                    continue
                obj = self._decl(code, lineno)
                items.append(obj)
            elif code[-1] == ":":
                name = code[:-1]
                m = _NAME.match(name)
                if m is None or m.end() != len(name):
                    raise GiveUp
                obj = Label(name, lineno)
                items.append(obj)
            else:
                raise GiveUp
            if cut >= 0:
                if '"' in code:  # the `//` may sit inside a string
                    raise GiveUp
                comments.append(_Comment(line[cut:], lineno, cut + 1))
            offset += len(line) + 1
        raise GiveUp  # no closing brace

    def _comment_after(self, line: str, col0: int, lineno: int) -> None:
        rest = line[col0:]
        k = rest.find("//")
        if k >= 0:
            self.comments.append(_Comment(rest[k:], lineno, col0 + k + 1))

    # -- statements -----------------------------------------------------------------
    def _decl(self, code: str, lineno: int) -> Decl:
        if code[-1] != ";" or "=" in code or code.count(";") != 1:
            raise GiveUp
        if '"' in code:  # only `.pragma "...";`, the string taken as written
            m = _PRAGMA.fullmatch(code)
            if m is None:
                raise GiveUp
            return Decl((".pragma",), (DeclItem(m.group(1)),), None, lineno)
        words = code[:-1].split()
        attrs = []
        k = 0
        for k, w in enumerate(words):
            if w[0] == ".":
                m = _DIRECTIVE.match(w)
                if m is None or m.end() != len(w) or _KEYWORD.match(w):
                    raise GiveUp
            elif not attrs or _DEC.fullmatch(w) is None:
                break
            attrs.append(w)
        else:
            k = len(words)
        if not attrs:
            raise GiveUp
        rest = " ".join(words[k:])
        items = []
        if rest:
            for piece in rest.split(","):
                m = _DITEM.fullmatch(piece.strip(_WS))
                if m is None:
                    raise GiveUp
                name, count, dims = m.group(1), m.group(2), m.group(3)
                dims_t = tuple(d[1:] for d in dims.split("]")[:-1]) if dims else ()
                items.append(DeclItem(name, None if count is None else parse_int(count), dims_t))
        if attrs[0] == ".reg" and any(it.name[:1] != "%" for it in items):
            self.bare_regs = True
        return Decl(tuple(attrs), tuple(items), None, lineno)

    # -- operands ---------------------------------------------------------------------
    def _operands(self, text: str) -> tuple:
        pieces = text.split(",")
        if ("[" in text or "{" in text or "(" in text) and not _balanced(pieces):
            pieces = _split_top(text)  # a comma inside brackets: `{%r1, %r2}`, `(a, b)`
        # Operands repeat (registers, addresses, constants): each distinct text is
        # read once per parse. Operands are immutable, so sharing them is safe.
        seen = self.seen
        out = []
        for x in pieces:
            op = seen.get(x)
            if op is None:
                op = seen[x] = self._operand(x.strip(_WS))
            out.append(op)
        return tuple(out)

    def _reg(self, name: str) -> Reg:
        r = self.regs.get(name)
        if r is None:
            r = self.regs[name] = Reg(name)
        return r

    def _operand(self, o: str):
        if not o:
            raise GiveUp
        c = o[0]
        if c == "%":
            if "|" in o:
                return self._pair(o)
            m = _REG.match(o)
            if m is None or m.end() != len(o):
                raise GiveUp
            r = self.regs.get(o)
            if r is None:
                r = self.regs[o] = Reg(o)
            return r
        if c == "[":
            return self._addr(o)
        if c.isdigit():
            m = _NUMBER.match(o)
            if m is None or m.end() != len(o):
                raise GiveUp
            return Imm(o)
        if c == "{":
            if o[-1] != "}":
                raise GiveUp
            inner = o[1:-1].strip(_WS)
            if not inner:
                return Vec(())
            items = []
            for x in inner.split(","):
                x = x.strip(_WS)
                if x[:1] in ("[", "{", "(", "!", "-") or "|" in x:
                    raise GiveUp
                items.append(self._operand(x))
            return Vec(tuple(items))
        if c == "(":
            if o[-1] != ")":
                raise GiveUp
            inner = o[1:-1].strip(_WS)
            if not inner:
                return ParenList(())
            items = []
            for k, x in enumerate(inner.split(",")):  # plist_ops: (REG | WORD) then (REG | WORD | NUMBER)
                x = x.strip(_WS)
                if x[:1] == "%":
                    m = _REG.match(x)
                    if m is None or m.end() != len(x):
                        raise GiveUp
                    items.append(self._reg(x))
                    continue
                m = _WORD.match(x)
                if m is not None and m.end() == len(x):
                    items.append(Sym(x))
                    continue
                m = _NUMBER.match(x)
                if k == 0 or m is None or m.end() != len(x):  # `(` then a number is a constant expression
                    raise GiveUp
                items.append(Imm(x))
            return ParenList(tuple(items))
        if c == "!":
            name = o[1:]
            m = _REG.match(name) if name[:1] == "%" else _WORD.match(name)
            if m is None or m.end() != len(name):
                raise GiveUp
            return Neg(self._reg(name))
        if c == "-":
            num = o[1:]
            m = _NUMBER.match(num)
            if m is None or m.end() != len(num):
                raise GiveUp
            if EXPR_NUMBER.fullmatch(num) is None:
                raise GiveUp
            return Imm(o)
        m = _WORD.match(o)
        if m is None:
            raise GiveUp
        end = m.end()
        if end == len(o):
            return Sym(o)
        name, rest = o[:end], o[end:]
        if rest[0] == "|":
            return self._pair(o)
        if rest[0] == "+":
            return Sym(name, _plus_offset(rest[1:]))
        if rest[0] == "-":
            return Sym(name, -_int(rest[1:]))
        if rest[0] == "[" and rest[-1] == "]":
            idx = rest[1:-1]
            return Sym(name, 0, _int(idx))
        raise GiveUp

    def _pair(self, o: str) -> Pair:
        a, _, b = o.partition("|")
        for x in (a, b):
            m = (_REG if x[:1] == "%" else _WORD).match(x)
            if m is None or m.end() != len(x) or not x:
                raise GiveUp
        return Pair(self._reg(a), self._reg(b))

    def _addr(self, o: str) -> Addr:
        if o[-1] != "]":
            raise GiveUp
        inner = o[1:-1].strip(_WS)
        if not inner:
            raise GiveUp
        c = inner[0]
        if c == "%":
            m = _REG.match(inner)
        elif c.isdigit():
            m = _NUMBER.match(inner)
        else:
            m = _WORD.match(inner)
        if m is None:
            raise GiveUp
        end = m.end()
        btext = inner[:end]
        base = self._reg(btext) if c == "%" else Imm(btext) if c.isdigit() else Sym(btext)
        if end == len(inner):
            return Addr(base)
        rest = inner[end:].lstrip(_WS)
        sign, rest = rest[0], rest[1:].lstrip(_WS)
        if sign == "+":
            off = _plus_offset(rest)
        elif sign == "-":
            off = -_int(rest)
        else:
            raise GiveUp
        return Addr(base, off, (), off == 0)


def _positions(items: list, pos: dict) -> None:
    """Where each statement starts, for placing comments, recorded only for
    a body that has comments. A statement's line is enough: it is alone on
    its line, and a comment on that line can only follow it (a ``//``
    comment runs to the line's end; ``/*`` sends the text to Lark), so
    ``(line, 1)`` orders exactly as its real column would."""
    for it in items:
        pos[id(it)] = (it.line, 1)
        if type(it) is Block:
            _positions(it.items, pos)


def _int(text: str) -> int:
    """An integer NUMBER token standing alone (what ``parser._int`` reads)."""
    m = _INT.match(text)
    if m is None or m.end() != len(text):
        raise GiveUp
    return parse_int(text)


def _plus_offset(text: str) -> int:
    """The offset after ``+``: an integer, or ``-`` and a small decimal (the
    grammar's ``+-4``, a constant expression Lark's path evaluates)."""
    if text[:1] == "-":
        if _DEC.fullmatch(text, 1) is None:
            raise GiveUp
        return -int(text[1:])
    return _int(text)


def _balanced(pieces: list[str]) -> bool:
    """Whether no piece of a split at every comma opens a bracket it does not close."""
    for x in pieces:
        if x.count("[") != x.count("]") or x.count("{") != x.count("}") or x.count("(") != x.count(")"):
            return False
    return True


def _split_top(text: str) -> list[str]:
    """Split at commas outside ``[ ] { } ( )``."""
    out = []
    depth = 0
    start = 0
    for k, ch in enumerate(text):
        if ch in "[{(":
            depth += 1
        elif ch in "]})":
            depth -= 1
            if depth < 0:
                raise GiveUp
        elif ch == "," and depth == 0:
            out.append(text[start:k])
            start = k + 1
    if depth:
        raise GiveUp
    out.append(text[start:])
    return out


def _code(line: str) -> str:
    """A line without its ``//`` comment and surrounding blanks."""
    k = line.find("//")
    if k >= 0:
        line = line[:k]
    return line.strip(_WS)


def blank(text: str, bodies) -> str:
    """``text`` with every body's inside replaced by its newlines, the last
    line's columns kept as spaces: every token outside keeps its position."""
    out = []
    prev = 0
    for open_off, close_off, *_ in bodies:
        out.append(text[prev:open_off + 1])
        inside = text[open_off + 1:close_off]
        k = inside.rfind("\n")
        out.append("\n" * inside.count("\n") + " " * (len(inside) - k - 1) if k >= 0 else " " * len(inside))
        prev = close_off
    out.append(text[prev:])
    return "".join(out)
