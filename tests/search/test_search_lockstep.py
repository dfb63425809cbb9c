"""Kernels searched in lockstep (ptxopt.search.stepwise, evaluate.stream) give the results of
searching them one after the other: outcomes, trajectories, evaluation counts and cache rows.

The driver tests use real states (passes and the action mask run) with a fake evaluator, so that
budgets, failures and a failing stream are cheap to set up; the end-to-end tests evaluate for real.
"""

from __future__ import annotations

import json
import re
import sqlite3

import pytest

from ptxopt.evaluate import Candidate, EvalResult, evaluate_many
from ptxopt.search import EvalOptions, Meter, SearchConfig, State, search_many
from ptxopt.search import run as run_mod
from ptxopt.search.beam import beam_steps
from ptxopt.search.exhaustive import exhaustive_steps
from ptxopt.search.greedy import greedy_steps
from ptxopt.search.random_search import random_steps
from ptxopt.search.stepwise import drive, lockstep

SMALL = ("gemm_tile_2x2x2", "gemm_tile_2x2x4", "gemm_tile_2x4x2")


def fake_results(candidates) -> list[EvalResult]:
    """Deterministic cycles per (kernel, pipeline); every cache_cv candidate fails."""
    out = []
    for c in candidates:
        bad = "cache_cv" in c.pipeline
        cycles = 1000.0 - 7 * len(c.pipeline) - (sum(map(ord, c.label + c.pipeline)) % 13)
        out.append(EvalResult(kernel=c.label, pipeline=c.pipeline, status="mismatch" if bad else "ok",
                              backend="sim", arch="sm_89", estimate=True, cycles=None if bad else cycles,
                              equivalence="differ" if bad else ("equal" if c.pipeline else "identical")))
    return out


class FakeStream:
    """A Stream over fake_results; ``fail_after`` submits: raise (a stream bug)."""

    def __init__(self, fail_after: int | None = None):
        self.pending, self.calls, self.fail_after = {}, 0, fail_after

    def submit(self, tag, cands):
        self.calls += 1
        if self.fail_after is not None and self.calls > self.fail_after:
            raise RuntimeError("stream bug")
        self.pending[tag] = fake_results(cands)

    def next(self):
        tag = next(reversed(self.pending))  # newest first: completion order must not matter
        return tag, self.pending.pop(tag)


def summary(out, meter: Meter):
    return (str(out.best.pipeline), out.best_result.cycles, out.note, meter.evaluations, dict(meter.failures),
            [json.dumps(s.to_json(), sort_keys=True) for s in out.steps])


def sequential(strategy, budget, **kw):
    got = []
    for k in SMALL:
        m = Meter(EvalOptions(cache=None), budget=budget)
        m_out = drive(strategy(State.root(Candidate.from_corpus(k)), m, **kw), m)
        got.append(summary(m_out, m))
    return got


def locked(strategy, budget, stream=None, **kw):
    jobs = []
    for k in SMALL:
        m = Meter(EvalOptions(cache=None), budget=budget)
        jobs.append((strategy(State.root(Candidate.from_corpus(k)), m, **kw), m))
    done = lockstep(jobs, fake_results, stream=stream)
    assert all(d.error is None for d in done)
    return [summary(d.outcome, m) for d, (_, m) in zip(done, jobs)]


@pytest.fixture(autouse=True)
def fake_meter(monkeypatch):
    import ptxopt.search.meter as measure_mod

    monkeypatch.setattr(measure_mod, "evaluate_many", lambda cands, **kw: fake_results(cands))


@pytest.mark.parametrize("strategy,kw", [(greedy_steps, dict(max_steps=3)), (beam_steps, dict(max_steps=2, width=2)),
                                         (exhaustive_steps, dict(max_steps=2)),
                                         (random_steps, dict(max_steps=3, rollouts=4, seed=3))])
@pytest.mark.parametrize("budget", [None, 9])
def test_lockstep_driver_is_the_sequential_search(strategy, kw, budget):
    want = sequential(strategy, budget, **kw)
    assert locked(strategy, budget, **kw) == want  # rounds
    assert locked(strategy, budget, stream=FakeStream(), **kw) == want  # streamed, out of order
    for n in (1, 4):  # the stream fails (a bug) at the first kernels' submits, or later: rounds finish the search
        assert locked(strategy, budget, stream=FakeStream(fail_after=n), **kw) == want
    if budget:
        assert all(ev <= budget for _, _, _, ev, _, _ in want) and any("budget" in (n or "") for _, _, n, *_ in want)


def test_a_kernel_whose_search_raises_does_not_stop_the_others():
    def broken(root, meter, **kw):
        yield [root]
        raise ValueError("strategy bug")

    for stream in (None, FakeStream()):
        jobs = []
        for i, k in enumerate(SMALL):
            m = Meter(EvalOptions(cache=None))
            jobs.append(((broken if i == 1 else greedy_steps)(State.root(Candidate.from_corpus(k)), m, max_steps=2), m))
        done = lockstep(jobs, fake_results, stream=stream)
        assert isinstance(done[1].error, ValueError) and done[1].outcome is None
        assert done[0].error is None and done[2].error is None and done[0].outcome.steps


def test_an_evaluation_that_raises_lands_on_its_kernel():
    """The shared evaluation raising: each kernel's part is evaluated alone, the culprit gets the error."""

    def evaluate(cands):
        if any(c.label == SMALL[2] and c.pipeline for c in cands):
            raise RuntimeError("evaluator bug")
        return fake_results(cands)

    jobs = [(greedy_steps(State.root(Candidate.from_corpus(k)), m, max_steps=2), m)
            for k, m in ((k, Meter(EvalOptions(cache=None))) for k in SMALL)]
    done = lockstep(jobs, evaluate)
    assert [d.error is None for d in done] == [True, True, False]
    assert "evaluator bug" in str(done[2].error)


def test_fatal_errors_stop_the_lockstep():
    from ptxopt.evaluate import CacheError

    def evaluate(cands):
        raise CacheError("the cache is gone")

    jobs = [(greedy_steps(State.root(Candidate.from_corpus(SMALL[0])), m, max_steps=2), m)
            for m in [Meter(EvalOptions(cache=None))]]
    with pytest.raises(CacheError):
        lockstep(jobs, evaluate, fatal=(CacheError,))


def test_groups_keep_identical_kernels_apart(monkeypatch):
    monkeypatch.setattr(run_mod, "LOCKSTEP_KERNELS", 3)
    a, b, c = (Candidate.from_corpus(k) for k in SMALL)
    ks = [(a, None), (b, None), (a, None), (c, None), (b, None), (c, None), (a, None)]
    assert run_mod._groups(ks) == [[0, 1], [2, 3, 4], [5, 6]]


# ---------------------------------------------------------------------------
# end to end: real evaluations, cold caches


def _rows(path) -> list:
    with sqlite3.connect(path) as db:
        results = db.execute("SELECT key, kernel, pipeline, status, cycles, registers, sass_instructions, "
                             "ptx_sha256 FROM results ORDER BY key").fetchall()
        aliases = db.execute("SELECT key, result_key FROM pipelines ORDER BY key").fetchall()
    return results + aliases


def _results(rs) -> str:
    docs = [(r.to_json() | {"wall_s": 0}, [s.to_json() for s in r.steps]) for r in rs]
    return re.sub(r"\(\d+(\.\d+)? s\)", "(s)", json.dumps(docs, sort_keys=True))  # a proof's seconds in its note


@pytest.mark.parametrize("strategy", ["greedy", pytest.param("beam", marks=pytest.mark.slow)])
def test_search_many_in_lockstep_matches_one_after_the_other(strategy, tmp_path, monkeypatch):
    monkeypatch.undo()  # the real evaluator
    kernels = [(Candidate.from_corpus(k), "gemm_tile") for k in SMALL[:2]]
    out = {}
    for ls in (False, True):
        cfg = SearchConfig(strategy, max_steps=2, beam_width=2,
                           options=EvalOptions(cache=str(tmp_path / f"{ls}.sqlite")))
        seen = []
        out[ls] = search_many(kernels, cfg, workers=0, lockstep=ls, on_result=lambda r: seen.append(r.kernel))
        assert seen == [k.label for k, _ in kernels]  # reported in input order
    assert _results(out[True]) == _results(out[False])
    assert all(r.error is None and r.evaluations > 1 for r in out[True])
    assert _rows(tmp_path / "True.sqlite") == _rows(tmp_path / "False.sqlite")


def test_stream_gives_evaluate_many_results(tmp_path, monkeypatch):
    monkeypatch.undo()
    from ptxopt.evaluate.stream import Stream

    k = "corpus:gemm_tile_2x2x2"
    a, b = [(k, ""), (k, "vec_ld"), (k, "not_a_pass")], [(k, "vec_st"), (k, "vec_ld")]
    want = evaluate_many(a + b, cache=None)
    with Stream(cache=tmp_path / "s.sqlite", batch=2) as s:
        s.submit("a", a)
        s.submit("b", b)
        got = dict([s.next(), s.next()])
        assert s.pending == 0
        with pytest.raises(RuntimeError):
            s.next()
        s.submit("c", [(k, "vec_ld")])  # answered from the cache by its pipeline key
        assert s.next()[1][0].cache_hit
    for r, w in zip(got["a"] + got["b"], want):
        assert (r.status, r.cycles, r.equivalence, r.registers) == (w.status, w.cycles, w.equivalence, w.registers)
    assert got["a"][2].status == "illegal"


def _broken_group(args):
    raise RuntimeError("group task bug")


@pytest.mark.slow  # a worker process and real ptxas runs (~7 s): the slow tier
def test_one_worker_searches_in_lockstep_groups(tmp_path, monkeypatch):
    """-j 1: the worker gets each group as one task (results as in this process, the driver writes
    the rows); a group whose task fails is searched again one kernel per task."""
    from ptxopt.executor.local import LocalExecutor

    monkeypatch.undo()
    kernels = [(Candidate.from_corpus(k), "gemm_tile") for k in SMALL[:1]]
    cfg = lambda name: SearchConfig("greedy", max_steps=1, options=EvalOptions(cache=str(tmp_path / name)))  # noqa
    here = search_many(kernels, cfg("here.sqlite"), workers=0)
    tasks, real = [], LocalExecutor.run

    def spy(ex, fn, args, **kw):
        tasks.append((fn.__name__, len(args)))
        return real(ex, fn, args, **kw)

    monkeypatch.setattr(LocalExecutor, "run", spy)
    one = search_many(kernels, cfg("one.sqlite"), workers=1)
    assert tasks == [("_group_job", 1)]
    assert _results(one) == _results(here)
    assert _rows(tmp_path / "one.sqlite") == _rows(tmp_path / "here.sqlite")

    tasks.clear()
    monkeypatch.setattr(run_mod, "_group_job", _broken_group)
    again = search_many(kernels, cfg("again.sqlite"), workers=1)
    assert tasks == [("_broken_group", 1), ("_job", 1)]
    assert _results(again) == _results(here)


def test_kernels_that_fail_before_their_search(tmp_path, monkeypatch):
    monkeypatch.undo()
    bad = (Candidate("this is not ptx\n", name="bad.ptx"), None)
    good = (Candidate.from_corpus(SMALL[0]), "gemm_tile")
    blocked = tmp_path / "file"
    blocked.write_text("")
    for ls in (False, True):  # only unparsable kernels: the (unusable) cache is never opened
        cfg = SearchConfig("greedy", max_steps=1, options=EvalOptions(cache=str(blocked / "sub" / "c.sqlite")))
        [r] = search_many([bad], cfg, lockstep=ls)
        assert "ParseError" in r.error and "bad.ptx:1:1" in r.error
    cfg = SearchConfig("greedy", max_steps=1, options=EvalOptions(cache=str(tmp_path / "c.sqlite")))
    rb, rg = search_many([bad, good], cfg)
    assert "ParseError" in rb.error and rb.evaluations == 0
    assert rg.error is None and rg.evaluations > 1 and rg.steps
