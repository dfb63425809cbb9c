"""The independent SMT re-check of ``proved`` pairs, shared by the
slow tier (``tests/equivalence/test_smt_recheck.py``) and ``benchmarks/studies/smt_solvers.py``.

Pairs come from the pass matrix (every pass on corpus kernels, cells whose
printing changed) and from the random-kernel fuzzer
(:mod:`ptxopt.testing.random_kernels`, every pass on each kernel). Each pair the
prover calls ``proved`` is re-checked by :func:`ptxopt.equivalence.prove.smt.recheck`
block by block; the tally counts ``equal`` (the solver agrees), ``differ``
(a counterexample to a proof: a bug in one of the two), ``unknown`` (a
timeout) and ``unsupported`` (a construct the encoding does not model).
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass, field

from ptxopt.equivalence.verdict import Verdict


@dataclass
class Pair:
    label: str  # "kernel/pass"
    original: str
    candidate: str
    entry: str


@dataclass
class Tally:
    pairs: int = 0  # changed pairs seen
    proved: int = 0  # of them proved by the prover (with its SMT fallback)
    proved_by_solver: int = 0  # ... of which a block needed the fallback
    status: Counter = field(default_factory=Counter)  # re-check status of proved pairs
    unsupported: Counter = field(default_factory=Counter)  # the construct, for unsupported re-checks
    counterexamples: list[str] = field(default_factory=list)
    verdicts: Counter = field(default_factory=Counter)  # the prover's verdict of every changed pair
    #: pairs whose verdict is neither ``proved`` nor ``inconclusive``, or that give no reason (a pass never
    #: changes a kernel's interface: tests/equivalence/test_prove_corpus.py holds the prover to this)
    unexplained: list[str] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)  # re-check time per pair

    def line(self) -> str:
        s = self.status
        return (f"{self.pairs} changed pairs, {self.proved} proved ({self.proved_by_solver} with the solver's "
                f"help); re-checked: {s['equal']} equal, {s['differ']} counterexamples, {s['unknown']} timeouts, "
                f"{s['unsupported']} unsupported")


def matrix_pairs(kernels, passes=None):
    """(kernel/pass) pairs of the pass matrix whose printing changed."""
    from ptxopt.ptx.emit import emit
    from ptxopt.ptx.parser import parse
    from ptxopt.passes import pass_names
    from ptxopt.passes.pipeline import changed_output

    for spec in kernels:
        m = parse(spec.ptx_text(), spec.id)
        text = emit(m)
        for p in passes or pass_names():
            new = changed_output(p, m)
            if new is not None and (cand := emit(new)) != text:
                yield Pair(f"{spec.id}/{p}", text, cand, spec.entry)


def fuzz_pairs(seeds, steps: int = 24, passes=None):
    """Every pass on random kernels (seeded: the same kernels every run)."""
    from ptxopt.ptx.emit import emit
    from ptxopt.ptx.parser import parse
    from ptxopt.passes import pass_names
    from ptxopt.passes.pipeline import changed_output
    from ptxopt.testing.random_kernels import kernel_from_steps, random_steps

    for seed in seeds:
        m = parse(kernel_from_steps(random_steps(random.Random(seed), steps)))
        text = emit(m)
        entry = m.entries[0].name
        for p in passes or pass_names():
            new = changed_output(p, m)
            if new is not None and (cand := emit(new)) != text:
                yield Pair(f"fuzz{seed}/{p}", text, cand, entry)


def recheck_pairs(pairs, *, timeout_ms: int | None = None, solver: str | None = None, on_pair=None) -> Tally:
    """Prove each pair; re-check every ``proved`` one (module doc)."""
    from ptxopt.equivalence.prove import prove
    from ptxopt.equivalence.prove.smt import recheck
    from ptxopt.equivalence.prove.smt import solver as solvers

    from ptxopt.ptx.parser import parse

    kw = {"timeout_ms": timeout_ms or solvers.TIMEOUT_MS, "solver": solver or solvers.DEFAULT}
    t = Tally()
    # each text is parsed once, not once by the prover and again by the re-check, and an original once for
    # all its pairs (consecutive: a kernel's passes): parsing was a third of the re-check's time. Neither
    # side changes the modules it is given; a text that does not parse goes to both as text (their verdicts)
    last: tuple[str, object] = ("", None)
    for p in pairs:
        t.pairs += 1
        if p.original != last[0]:
            last = (p.original, _parsed(parse, p.original))
        original, candidate = last[1], _parsed(parse, p.candidate)
        pr = prove(original, candidate, entry=p.entry)
        t.verdicts[pr.verdict] += 1
        if pr.verdict not in (Verdict.PROVED, Verdict.INCONCLUSIVE) or not pr.reason:
            t.unexplained.append(f"{p.label}: {pr.verdict}: {pr.reason or 'no reason'}")
        if pr.verdict != Verdict.PROVED:
            continue
        t.proved += 1
        t.proved_by_solver += "SMT solver" in pr.reason
        r = recheck(original, candidate, p.entry, **kw)
        t.status[r.status] += 1
        t.seconds.append(r.seconds)
        if r.status == "unsupported":
            t.unsupported[_construct(r.reason)] += 1
        if r.status == "differ":
            t.counterexamples.append(f"{p.label}: {r.reason}")
        if on_pair is not None:
            on_pair(p, pr, r)
    return t


def _parsed(parse, text: str):
    """``text`` parsed, or ``text`` itself when it does not parse."""
    from ptxopt.ptx.parser import ParseError

    try:
        return parse(text)
    except ParseError:
        return text


def _construct(reason: str) -> str:
    """The unsupported construct, without lines and names."""
    import re

    r = re.sub(r"^.*?(line \d+: )", "", reason)
    r = re.sub(r"%[\w.]+", "%r", r)
    return re.sub(r"\d+", "N", r)[:90]


__all__ = ["Pair", "Tally", "fuzz_pairs", "matrix_pairs", "recheck_pairs"]
