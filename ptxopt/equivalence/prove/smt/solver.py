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


__all__ = ["DEFAULT", "TIMEOUT_MS", "Answer", "available", "solve"]
