"""Run one SMT-LIB query on a solver: ``unsat``, ``sat`` (with a model) or ``unknown``.

Two backends read the same text (:mod:`.terms`): ``z3`` (the ``z3-solver``
wheel) and ``bitwuzla`` (the ``bitwuzla`` wheel). :data:`DEFAULT` is the one
``benchmarks/studies/smt_solvers.py`` measured faster on this project's queries; the
other is used only when asked for (the comparison script, a user's choice).
A solver that is not installed gives ``unknown`` with a reason, never an
exception: the SMT check is an extra way to say ``proved``, and without a
solver it simply says nothing.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Iterable

DEFAULT = "bitwuzla"  # benchmarks/studies/smt_solvers.py, 120 queries: median 3.0 ms vs 8.8 ms (z3), total 2.0 s vs 7.6 s
TIMEOUT_MS = 2000  # per query


@dataclass
class Answer:
    status: str  # "unsat", "sat" or "unknown"
    model: dict[str, int] = field(default_factory=dict)  # free variable (unquoted) -> value
    seconds: float = 0.0
    note: str = ""


def available(name: str = DEFAULT) -> bool:
    try:
        __import__("bitwuzla" if name == "bitwuzla" else "z3")
    except ImportError:
        return False
    return True


def solve(text: str, timeout_ms: int = TIMEOUT_MS, solver: str = DEFAULT) -> Answer:
    t0 = time.perf_counter()
    try:
        ans = _bitwuzla(text, timeout_ms) if solver == "bitwuzla" else _z3(text, timeout_ms)
    except ImportError as e:
        ans = Answer("unknown", note=f"solver {solver} not installed ({e})")
    except Exception as e:  # noqa: BLE001 - a query the solver rejects is no answer, never a verdict
        ans = Answer("unknown", note=f"{solver} rejected the query: {type(e).__name__}: {e}")
    ans.seconds = time.perf_counter() - t0
    return ans


def _unquote(name: str) -> str:
    return name[1:-1] if name.startswith("|") and name.endswith("|") else name


def _z3(text: str, timeout_ms: int) -> Answer:
    import z3

    s = z3.Solver()
    s.set("timeout", int(timeout_ms))
    s.from_string(text)
    r = s.check()
    if r == z3.unsat:
        return Answer("unsat")
    if r != z3.sat:
        return Answer("unknown", note=f"z3: {s.reason_unknown()}")
    m = s.model()
    model = {}
    for d in m.decls():
        if d.arity() != 0:
            continue
        v = m[d]
        if z3.is_bv_value(v):
            model[_unquote(d.name())] = v.as_long()
        elif z3.is_true(v) or z3.is_false(v):
            model[_unquote(d.name())] = int(z3.is_true(v))
    return Answer("sat", model)


def _bitwuzla(text: str, timeout_ms: int) -> Answer:
    import bitwuzla as bz

    tm = bz.TermManager()
    opts = bz.Options()
    opts.set(bz.Option.PRODUCE_MODELS, True)
    opts.set(bz.Option.TIME_LIMIT_PER, int(timeout_ms))
    parser = bz.Parser(tm, opts)
    parser.parse(text.replace("(check-sat)\n", ""), True, False)
    bw = parser.bitwuzla()
    r = bw.check_sat()
    if r == bz.Result.UNSAT:
        return Answer("unsat")
    if r != bz.Result.SAT:
        return Answer("unknown", note="bitwuzla: unknown (time limit)")
    model = {}
    for t in parser.get_declared_funs():
        srt = t.sort()
        if srt.is_bv():
            model[_unquote(t.symbol())] = int(bw.get_value(t).value(10))
        elif srt.is_bool():
            model[_unquote(t.symbol())] = int(bool(bw.get_value(t).value()))
    return Answer("sat", model)


class Incremental:
    """One query parsed once and checked many times under assumptions.

    ``text`` declares Boolean constants that the query's assertions read;
    :meth:`check` assumes some of them true and others false for one
    check-sat, without asserting anything, so the solver keeps what it built
    and learned (the bit-blasted query, its learnt clauses) from one check to
    the next. A caller that narrows a query one step at a time (Houdini's
    loop, :mod:`ptxopt.equivalence.prove.swp_sim`) asks each step as
    :func:`solve` would ask a fresh query with the same assertions, and
    gets the same answers for a fraction of the time
    (``benchmarks/studies/houdini_incremental.py`` measures both ways).

    The same guarantees as :func:`solve`: a solver that is not installed or
    rejects the text gives ``unknown`` with a reason, never an exception;
    ``timeout_ms`` limits each check."""

    def __init__(self, text: str, timeout_ms: int = TIMEOUT_MS, solver: str = DEFAULT):
        self.timeout_ms, self.solver = int(timeout_ms), solver
        self._state = None
        self._broken = ""
        try:
            self._state = self._open_bitwuzla(text) if solver == "bitwuzla" else self._open_z3(text)
        except ImportError as e:
            self._broken = f"solver {solver} not installed ({e})"
        except Exception as e:  # noqa: BLE001 - as solve(): a rejected query is no answer
            self._broken = f"{solver} rejected the query: {type(e).__name__}: {e}"

    def check(self, true: Iterable[str] = (), false: Iterable[str] = (), want: Iterable[str] = ()) -> Answer:
        """Check the query with the Boolean constants named ``true`` assumed
        true and those named ``false`` assumed false (names unquoted); a
        ``sat`` answer's model holds the values (0/1) of the Boolean
        constants named in ``want``."""
        t0 = time.perf_counter()
        if self._state is None:
            ans = Answer("unknown", note=self._broken)
        else:
            try:
                check = self._check_bitwuzla if self.solver == "bitwuzla" else self._check_z3
                ans = check(list(true), list(false), list(want))
            except Exception as e:  # noqa: BLE001
                ans = Answer("unknown", note=f"{self.solver} failed on a check: {type(e).__name__}: {e}")
        ans.seconds = time.perf_counter() - t0
        return ans

    def _open_bitwuzla(self, text: str):
        import bitwuzla as bz

        tm = bz.TermManager()
        opts = bz.Options()
        opts.set(bz.Option.PRODUCE_MODELS, True)
        opts.set(bz.Option.TIME_LIMIT_PER, self.timeout_ms)
        parser = bz.Parser(tm, opts)
        parser.parse(text.replace("(check-sat)\n", ""), True, False)
        return bz, tm, parser.bitwuzla(), {_unquote(t.symbol()): t for t in parser.get_declared_funs()}

    def _check_bitwuzla(self, true, false, want) -> Answer:
        bz, tm, bw, consts = self._state
        assumed = [consts[n] for n in true] + [tm.mk_term(bz.Kind.NOT, [consts[n]]) for n in false]
        r = bw.check_sat(*assumed)
        if r == bz.Result.UNSAT:
            return Answer("unsat")
        if r != bz.Result.SAT:
            return Answer("unknown", note="bitwuzla: unknown (time limit)")
        return Answer("sat", {n: int(bool(bw.get_value(consts[n]).value())) for n in want})

    def _open_z3(self, text: str):
        import z3

        s = z3.Solver()
        s.set("timeout", self.timeout_ms)
        s.from_string(text.replace("(check-sat)\n", ""))
        return z3, s

    def _check_z3(self, true, false, want) -> Answer:
        z3, s = self._state
        r = s.check(*[z3.Bool(n) for n in true], *[z3.Not(z3.Bool(n)) for n in false])
        if r == z3.unsat:
            return Answer("unsat")
        if r != z3.sat:
            return Answer("unknown", note=f"z3: {s.reason_unknown()}")
        m = s.model()
        return Answer("sat", {n: int(z3.is_true(m.eval(z3.Bool(n), model_completion=True))) for n in want})


__all__ = ["DEFAULT", "TIMEOUT_MS", "Answer", "Incremental", "available", "solve"]
