"""The evaluator's pipeline-prefix memo (ptxopt.evaluate.prefix): a pipeline built from the module of
its longest evaluated prefix gives what the whole pipeline gives from the original -- the printed
module, the pass records, the evaluator's results and a search's trajectories -- and never the module
of another launch."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from typing import ClassVar

import pytest

from ptxopt import emit
from ptxopt.kernels.corpus import get
from ptxopt.equivalence.launch import Launch
from ptxopt.evaluate import Candidate, EvaluationSession, evaluate_many, prepare as frontend
from ptxopt.evaluate.prefix import PrefixMemo, key_of, run_pipeline
from ptxopt.ptx.parser import parse
from ptxopt.passes.base import ChangeReport, IllegalPass, Pass
from ptxopt.passes.passmanager import PassFailure, PassManager
from ptxopt.passes.pipeline import Pipeline
from ptxopt.search import EvalOptions, SearchConfig, search_many

KERNELS = ("gemm_tile_4x4x4", "cuda_matmul_tiled_smem", "triton_softmax_row", "cuda_saxpy")
#: each pipeline after its prefixes, as a search builds them (and a few whose prefix was never built)
PIPELINES = ("vec_ld", "vec_ld,cache_cg", "vec_ld,cache_cg,reorder_cp", "vec_ld,cache_cg,reorder_cp,maxnreg_64",
             "vec_ld,cache_cg,reorder_cp,maxnreg_64,prefetch_L2", "vec_ld,cache_cg,reorder_lf",
             "vec_st,reorder_il,st_cache_cs", "vec_ld,vec_st,unroll_2,nc_ld", "split_ld,reorder_sl,cache_cs")


def _records(run) -> list:
    return [(r.name, r.skipped, r.reverted, r.report and json.dumps(r.report.to_json(), sort_keys=True))
            for r in run.records]


def _module(kernel: str):
    return parse(get(kernel).ptx_text(), kernel)


@pytest.mark.parametrize("kernel", KERNELS)
def test_a_pipeline_from_its_prefix_is_the_whole_pipeline(kernel):
    m, memo = _module(kernel), PrefixMemo()
    original = emit(m)
    for text in PIPELINES:
        pipe = Pipeline.parse(text)
        k, _ = memo.longest(key_of(pipe.passes))
        got = run_pipeline(memo, m, pipe)
        want = PassManager(pipe).run(m)
        assert emit(got.module) == emit(want.module), (text, k)
        assert _records(got) == _records(want) and str(got.pipeline) == text
    assert memo.hits >= 6  # most of them started from a prefix
    assert emit(m) == original  # the original is never changed
    # nothing that extended a remembered module changed it: each still prints what its pipeline gives
    for passes, built in memo.items():
        assert emit(built.module) == emit(PassManager(Pipeline(passes)).run(m).module)
    # the whole pipeline again: the remembered module itself, no pass runs
    again = run_pipeline(memo, m, Pipeline.parse(PIPELINES[3]))
    assert again.module is dict(memo.items())[Pipeline.parse(PIPELINES[3]).passes].module


@dataclass(frozen=True)
class Refuse(Pass):
    kind: ClassVar[str] = "test_refuse"

    def check_legal(self, module):
        raise IllegalPass("never here")

    def run(self, module):
        return ChangeReport(self.name)


@dataclass(frozen=True)
class Boom(Pass):
    kind: ClassVar[str] = "test_boom"

    def run(self, module):
        raise RuntimeError("boom")


@dataclass(frozen=True)
class Listy(Pass):  # a field a hash cannot take: never a key
    kind: ClassVar[str] = "test_listy"
    sizes: list = None

    def run(self, module):
        return ChangeReport(self.name)


def test_refusals_crashes_and_unhashable_passes_as_without_the_memo(tmp_path):
    m, memo = _module("gemm_tile_2x2x2"), PrefixMemo()
    vec = Pipeline.parse("vec_ld").passes
    refused = Pipeline(vec + (Refuse(),))
    run_pipeline(memo, m, refused)
    longer = Pipeline(refused.passes + Pipeline.parse("cache_cg").passes)
    assert memo.longest(key_of(longer.passes))[0] == 2
    got, want = run_pipeline(memo, m, longer), PassManager(longer).run(m)
    assert _records(got) == _records(want) and got.records[1].skipped == "illegal: never here"
    assert emit(got.module) == emit(want.module)

    crash = Pipeline(vec + (Boom(),))
    run_pipeline(memo, m, Pipeline(vec))
    assert memo.longest(key_of(crash.passes))[0] == 1  # the crash comes after a remembered prefix
    with pytest.raises(PassFailure) as with_memo:
        run_pipeline(memo, m, crash)
    with pytest.raises(PassFailure) as without:
        PassManager(crash).run(m)
    assert str(with_memo.value) == str(without.value)  # the reproducer is the whole pipeline's, from the original
    assert crash.passes not in dict(memo.items())  # a crash is not remembered

    listy = Pipeline(vec + (Listy(sizes=[1]),))
    assert emit(run_pipeline(memo, m, listy).module) == emit(PassManager(listy).run(m).module)
    assert all(Listy(sizes=[1]) not in passes for passes, _ in memo.items())


def test_a_pass_method_replaced_at_run_time_is_another_key(monkeypatch):
    """A pass whose ``run`` or ``check_legal`` is replaced (a test's monkeypatch) is not answered
    with the module its old code built; put back, the old entry serves again."""
    m, memo = _module("gemm_tile_2x2x2"), PrefixMemo()
    pipe = Pipeline.parse("vec_ld,cache_cg")
    run_pipeline(memo, m, Pipeline(pipe.passes[:1]))
    before = emit(run_pipeline(memo, m, pipe).module)
    cls = type(pipe.passes[1])
    monkeypatch.setattr(cls, "check_legal", lambda self, module: (_ for _ in ()).throw(IllegalPass("patched")))
    assert memo.longest(key_of(pipe.passes))[0] == 1  # vec_ld's code did not change
    patched = run_pipeline(memo, m, pipe)
    assert patched.records[1].skipped == "illegal: patched" and _records(patched) == _records(PassManager(pipe).run(m))
    monkeypatch.undo()
    assert memo.longest(key_of(pipe.passes))[0] == 2 and emit(run_pipeline(memo, m, pipe).module) == before


def test_bounded_least_recently_used_first():
    memo, m = PrefixMemo(max_entries=2), _module("gemm_tile_2x2x2")
    a, b, c = (Pipeline.parse(t) for t in ("vec_ld", "vec_st", "cache_cg"))
    for p in (a, b):
        run_pipeline(memo, m, p)
    memo.longest(key_of(a.passes))  # a is used again: b goes first
    run_pipeline(memo, m, c)
    assert [passes for passes, _ in memo.items()] == [a.passes, c.passes]


def test_the_launch_is_part_of_the_key():
    """launch_bounds takes the block from the performance launch: a pipeline bound to another launch
    never starts from (or ends with) the module built for the first."""
    m, memo = _module("cuda_saxpy"), PrefixMemo()
    pipe = Pipeline.parse("cache_cg,launch_bounds_2")
    small, big = Launch(grid=(4, 1, 1), block=(64, 1, 1)), Launch(grid=(4, 1, 1), block=(256, 1, 1))
    run_pipeline(memo, m, Pipeline.parse("cache_cg"))
    a = run_pipeline(memo, m, pipe.with_launch(small, "saxpy"))
    assert memo.longest(key_of(pipe.with_launch(big, "saxpy").passes))[0] == 1  # cache_cg alone is shared
    b = run_pipeline(memo, m, pipe.with_launch(big, "saxpy"))
    assert ".maxntid 64\n" in emit(a.module) and ".maxntid 256\n" in emit(b.module)
    assert emit(b.module) == emit(PassManager(pipe.with_launch(big, "saxpy")).run(m).module)


def _fresh() -> EvaluationSession:
    return EvaluationSession.cold()


def _same_results(a, b) -> None:
    strip = lambda r: re.sub(r"\(\d+(\.\d+)? s\)", "(s)",  # noqa: E731  a note's seconds
                             json.dumps({k: v for k, v in r.to_json().items() if k not in ("timings", "cache_hit")},
                                        sort_keys=True))
    assert [strip(r) for r in a] == [strip(r) for r in b]


def test_the_evaluator_gives_the_same_results_under_two_launches(monkeypatch):
    """The same kernel and pipelines under two performance launches, each evaluated after its
    prefixes: the results (printed module's digest in the key, verdicts) are those without the memo."""
    spec = get("cuda_saxpy")
    cands = [Candidate.from_corpus(spec, p) for p in ("cache_cg", "cache_cg,launch_bounds_2",
                                                        "cache_cg,launch_bounds_2,reorder_cp")]
    launches = (Launch(grid=(4, 1, 1), block=(64, 1, 1)), Launch(grid=(4, 1, 1), block=(128, 1, 1)))
    runs = {}
    for flag in (False, True):
        monkeypatch.setattr(frontend, "PREFIXES", flag)
        with _fresh().active() as session:
            runs[flag] = [r for launch in launches for c in cands
                          for r in evaluate_many([replace(c, performance=launch)], cache=None)]
    _same_results(runs[False], runs[True])
    assert len({r.key for r in runs[True]}) == 6  # every launch-bound module is its own
    orig = next(iter(session.originals.values()))
    assert orig.prefixes.hits >= 4 and len(orig.prefixes) == 5  # cache_cg once, the bound ones per launch


def _search_both_ways(monkeypatch, strategy: str, kernels: tuple[str, ...], steps: int) -> None:
    """Searched with the passes applied once (the evaluator measures each state's own module)
    and applied again by the evaluator from the original: the same trajectories."""
    cands = [(Candidate.from_corpus(get(k)), None) for k in kernels]
    got, runs = {}, []
    real_run = PassManager.run
    monkeypatch.setattr(PassManager, "run", lambda pm, m: runs.append(len(pm.pipeline)) or real_run(pm, m))
    for once in (False, True):
        monkeypatch.setattr(frontend, "PREFIXES", once)
        monkeypatch.setattr(frontend, "HAND_OVER", once)
        runs.clear()
        with _fresh().active() as session:
            cfg = SearchConfig(strategy, max_steps=steps, options=EvalOptions(backend="sim", cache=None))
            got[once] = [(r.kernel, r.pipeline, r.best_cycles, r.verdict, r.evaluations,
                          [json.dumps(s.to_json(), sort_keys=True) for s in r.steps])
                         for r in search_many(cands, cfg)]
        # applied once: the evaluator runs no pass of any candidate (only the empty pipeline of the roots)
        assert any(runs) != once
    assert got[False] == got[True]  # best pipelines, cycles, verdicts, every step's candidates
    assert any(len(r[1].split(",")) >= 2 for r in got[True])  # some best pipeline was extended
    # every module the search built and the evaluator measured prints what its pipeline gives from the
    # original through the pass manager (passes are deterministic: a state's digest stands for it)
    built = [(o, passes, b) for o in session.originals.values() for passes, b in o.prefixes.items()]
    assert built
    for o, passes, b in built:
        assert emit(b.module) == emit(real_run(PassManager(Pipeline(passes)), o.module).module)


def test_a_greedy_search_is_the_same_with_and_without_the_memo(monkeypatch):
    _search_both_ways(monkeypatch, "greedy", ("gemm_tile_2x4x2", "cuda_saxpy"), 3)


@pytest.mark.slow
def test_a_beam_search_is_the_same_with_and_without_the_memo(monkeypatch):
    _search_both_ways(monkeypatch, "beam", ("gemm_tile_4x4x4", "cuda_saxpy", "triton_softmax_row"), 4)


def test_a_new_session_starts_without_prefixes():
    c = Candidate.from_corpus(get("gemm_tile_2x2x2"), "vec_ld,vec_st")
    with _fresh().active() as first:
        evaluate_many([replace(c, pipeline="vec_ld"), c], cache=None)
    orig = next(iter(first.originals.values()))
    assert len(orig.prefixes) == 2 and orig.prefixes.hits == 1
    second = EvaluationSession()
    evaluate_many([c], cache=None, session=second)
    fresh = next(iter(second.originals.values()))
    assert fresh is not orig and len(fresh.prefixes) == 1 and fresh.prefixes.hits == 0
    assert len(orig.prefixes) == 2  # the first session's memos are its own
    first.originals.clear()  # the prefixes go with their original
    evaluate_many([c], cache=None, session=first)
    again = next(iter(first.originals.values()))
    assert again is not orig and len(again.prefixes) == 1 and again.prefixes.hits == 0
