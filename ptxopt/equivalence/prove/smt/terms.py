"""SMT-LIB 2 text for one query, built incrementally.

Why text and not a solver's Python API: the same query then runs on either
solver (z3, bitwuzla: :mod:`.solver`), can be written to a file and replayed
with a command-line solver, and the encoder does not depend on either
library. Every intermediate value is a ``define-fun``, so a value used many
times is written once (the text stays linear in the block's size), and
expressions are hash-consed: the same expression gets the same name, so
what both kernels compute the same way is one name, and an obligation
between two equal names is dropped before the solver sees it.

Sorts are ``(_ BitVec w)`` for every register and immediate (predicates
included: ``(_ BitVec 1)``, so ``selp`` and ``ite`` need no special case)
and ``(Array (_ BitVec a) (_ BitVec 8))`` for a state space's bytes.
"""

from __future__ import annotations

import re

_PLAIN = re.compile(r"^[A-Za-z_][A-Za-z0-9_.]*$")


def bv_sort(w: int) -> str:
    return f"(_ BitVec {w})"


def mem_sort(a: int) -> str:
    return f"(Array (_ BitVec {a}) (_ BitVec 8))"


def sym(name: str) -> str:
    """A name as an SMT-LIB symbol (quoted unless plain)."""
    if _PLAIN.match(name):
        return name
    if "|" in name or "\\" in name:
        raise ValueError(f"cannot quote {name!r}")
    return f"|{name}|"


def lit(value: int, w: int) -> str:
    return f"(_ bv{value % (1 << w)} {w})"


class Query:
    """Declarations (free variables, uninterpreted functions) and definitions
    of one query; ``width`` records each term's bit width (0 for Bool)."""

    def __init__(self) -> None:
        self.lines: list[str] = ["(set-logic QF_AUFBV)"]
        self.declared: dict[str, tuple] = {}  # name -> (kind, width / (args, result))
        self.width: dict[str, int] = {}
        self._n = 0
        self._cons: dict[str, str] = {}
        self._expr: dict[str, str] = {}  # name -> expr (the inverse of _cons)
        self._ids: dict[tuple, int] = {}

    # -- free symbols ----------------------------------------------------------

    def var(self, name: str, w: int) -> str:
        """A free bit-vector variable shared by everything that names it."""
        s = sym(name)
        have = self.declared.get(s)
        if have is None:
            self.declared[s] = ("var", w)
            self.lines.append(f"(declare-fun {s} () {bv_sort(w)})")
            self.width[s] = w
        elif have != ("var", w):
            raise ValueError(f"{name} declared twice with different sorts")
        return s

    def array(self, name: str, a: int) -> str:
        s = sym(name)
        if s not in self.declared:
            self.declared[s] = ("array", a)
            self.lines.append(f"(declare-fun {s} () {mem_sort(a)})")
        return s

    def uf(self, key: str, args: list[str], w: int) -> str:
        """``key(args)``: an uninterpreted function of the operands' bits, one
        per exact operator (its name carries the argument and result widths)."""
        ws = [self.width[x] for x in args]
        name = sym(f"uf:{key}:{'.'.join(map(str, ws))}:{w}")
        if name not in self.declared:
            self.declared[name] = ("uf", (tuple(ws), w))
            sig = " ".join(bv_sort(x) for x in ws)
            self.lines.append(f"(declare-fun {name} ({sig}) {bv_sort(w)})")
        return self.define(f"({name} {' '.join(args)})" if args else name, w)

    def content_id(self, content: tuple) -> int:
        """A number for ``content`` (a tuple of term names and keys), the same
        for equal tuples anywhere in this query: names a result that is a
        function of exactly those terms (:meth:`.encode.BlockEncoder._warp_wide`)."""
        return self._ids.setdefault(content, len(self._ids))

    # -- definitions -------------------------------------------------------------

    def define(self, expr: str, w: int) -> str:
        """A name for ``expr`` (width ``w``; 0: Bool, -a: an array indexed by a bits)."""
        if expr in self.width:
            return expr
        have = self._cons.get(expr)
        if have is not None:  # hash-consing: one name per expression, so equal computations in
            return have       # both kernels are the same name and compare equal without the solver
        folded = self._fold_ite(expr)
        if folded is not None:
            return self.define(folded, w)
        self._n += 1
        name = f"t{self._n}"
        sort = "Bool" if w == 0 else (mem_sort(-w) if w < 0 else bv_sort(w))
        self.lines.append(f"(define-fun {name} () {sort} {expr})")
        self.width[name] = w
        self._cons[expr] = name
        self._expr[name] = expr
        return name

    def _fold_ite(self, expr: str) -> str | None:
        """``(ite C (ite C A B) Y)`` as ``(ite C A Y)`` and ``(ite C X (ite C A B))``
        as ``(ite C X B)`` (an identity: ``C`` is one pure term), where the inner
        ``ite`` is a defined name; None when neither applies. A value substituted
        under a guard (:mod:`ptxopt.equivalence.prove.swp_sim`) then meets its
        guarded use as the same term."""
        if not expr.startswith("(ite "):
            return None
        parts = _split3(expr[5:-1])
        if parts is None:
            return None
        c, x, y = parts
        for k, arm in ((1, x), (2, y)):
            inner = self._expr.get(arm, "")
            if inner.startswith("(ite "):
                ip = _split3(inner[5:-1])
                if ip is not None and ip[0] == c:
                    return f"(ite {c} {ip[1]} {y})" if k == 1 else f"(ite {c} {x} {ip[2]})"
        return None

    def text(self, goal: str) -> str:
        """The query: is ``goal`` (a Bool term) satisfiable?"""
        return "\n".join([*self.lines, f"(assert {goal})", "(check-sat)"]) + "\n"


def _split3(body: str) -> tuple[str, str, str] | None:
    """The three top-level terms of ``body`` (an ``ite``'s arguments), or None."""
    out, depth, start, bar = [], 0, None, False
    for i, ch in enumerate(body):
        if bar:
            bar = ch != "|"
            continue
        if ch == "|":
            bar = True
            start = i if start is None and depth == 0 else start
        elif ch == "(":
            start = i if start is None and depth == 0 else start
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == " " and depth == 0:
            if start is not None:
                out.append(body[start:i])
                start = None
            continue
        elif start is None and depth == 0:
            start = i
    if start is not None:
        out.append(body[start:])
    return tuple(out) if len(out) == 3 else None
