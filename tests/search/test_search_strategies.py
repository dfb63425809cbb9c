"""Search strategies (greedy, beam, exhaustive, random), search_kernel,
summarize and the JSONL trajectories, on the smallest corpus kernels.

Every search here uses one temporary evaluation cache for the module (never
~/.cache): the strategies revisit the same modules, so later searches are
mostly cache hits. Nothing asserted depends on hits or misses except where
a test says so.
"""

from __future__ import annotations

import json
import math
import random
import re
from dataclasses import replace

import pytest

import ptxopt.search.meter as measure_mod
from ptxopt.evaluate import Candidate, EvalResult
from ptxopt.search import (ACTIONS, N_ACTIONS, STEP_COST, STOP, EvalOptions, KernelResult, Meter, SearchConfig, State,
                           episodes, read_jsonl, reward, search_kernel, summarize, write_jsonl)

KERNEL = "gemm_tile_2x2x4"  # greedy takes two passes here, then stops


@pytest.fixture(scope="module")
def options(tmp_path_factory) -> EvalOptions:
    return EvalOptions(cache=tmp_path_factory.mktemp("search") / "eval.sqlite")


@pytest.fixture(scope="module")
def kernel() -> Candidate:
    return Candidate.from_corpus(KERNEL)


@pytest.fixture(scope="module")
def exhaustive2(kernel, options) -> KernelResult:
    return search_kernel(kernel, SearchConfig("exhaustive", max_steps=2, options=options))


@pytest.fixture(scope="module")
def greedy(kernel, options, exhaustive2) -> KernelResult:
    # (after the exhaustive search: greedy's first two steps are then cache hits)
    return search_kernel(kernel, SearchConfig("greedy", options=options))


@pytest.fixture(scope="module")
def beam3(kernel, options, exhaustive2) -> KernelResult:
    return search_kernel(kernel, SearchConfig("beam", max_steps=3, beam_width=4, options=options))


def replay(kernel: Candidate, pipeline: str) -> list[State]:
    """The states along ``pipeline`` from the root (root first)."""
    states = [State.root(kernel)]
    for name in filter(None, pipeline.split(",")):
        states.append(states[-1].child(name))
    return states


def check_episode(steps, baseline: float, max_steps: int) -> None:
    """One episode's invariants: steps numbered 0.., a chain of cycles and
    pipelines, the reward per step, and stop (if any) only at the end."""
    assert [s.step for s in steps] == list(range(len(steps)))
    assert steps[0].pipeline == "" and steps[0].cycles_before == baseline
    for a, b in zip(steps, steps[1:]):
        assert a.action != STOP
        assert b.cycles_before == a.cycles_after
        assert b.pipeline == (f"{a.pipeline},{a.action}" if a.pipeline else a.action)
    for s in steps:
        assert len(s.action_mask) == N_ACTIONS and s.action_mask[-1] == 1
        assert s.action_mask[ACTIONS.index(s.action)] == 1  # the action taken was legal
        assert s.observation[-1] == s.pipeline.count(",") + (1 if s.pipeline else 0)  # step slot = depth
        if s.action == STOP:
            assert s.reward == 0.0 and s.cycles_after == s.cycles_before
        else:
            assert s.reward == pytest.approx(math.log(s.cycles_before / s.cycles_after) - STEP_COST)
    passes = [s for s in steps if s.action != STOP]
    assert len(passes) <= max_steps
    if steps[-1].action != STOP:
        assert len(passes) == max_steps


# ---------------------------------------------------------------------------
# greedy


def test_greedy_does_not_make_the_kernel_slower(greedy):
    assert greedy.error is None and greedy.note is None
    assert greedy.baseline_cycles > 0
    assert greedy.best_cycles <= greedy.baseline_cycles
    assert greedy.pipeline  # this kernel has a known improvement (vectorizing)
    assert greedy.best_cycles < greedy.baseline_cycles and greedy.improvement_pct > 0
    assert greedy.speedup == pytest.approx(greedy.baseline_cycles / greedy.best_cycles)
    assert greedy.estimate and greedy.to_json()["cycles_kind"] == "ESTIMATE"


def test_greedy_trajectory_is_a_chain_ending_with_stop(greedy):
    steps = greedy.steps
    check_episode(steps, greedy.baseline_cycles, max_steps=6)
    assert steps[-1].action == STOP  # stopped before max_steps
    assert [s.action for s in steps[:-1]] == greedy.pipeline.split(",")
    assert steps[-1].cycles_after == greedy.best_cycles
    assert {(s.kernel, s.strategy, s.episode) for s in steps} == {(KERNEL, "greedy", 0)}
    assert all(s.estimate and s.backend == "sim" and s.arch == "sm_89" for s in steps)


def test_greedy_rewards_telescope(greedy):
    total = sum(s.reward for s in greedy.steps)
    n = len(greedy.pipeline.split(","))
    assert total == pytest.approx(math.log(greedy.baseline_cycles / greedy.best_cycles) - STEP_COST * n)


def test_greedy_takes_the_best_improving_candidate(greedy, kernel):
    states = replay(kernel, greedy.pipeline)
    for s, state in zip(greedy.steps, states):
        assert s.pipeline == str(state.pipeline)
        # candidates: every legal pass from this state, measured
        assert set(s.candidates) == {m.action for m in state.legal_moves()}
        assert s.action_mask == [int(x) for x in state.action_mask()]
        ok = [c for c in s.candidates.values() if c is not None]
        if s.action == STOP:
            assert all(c >= s.cycles_before for c in ok)
        else:
            assert s.cycles_after == min(ok) < s.cycles_before
            assert s.candidates[s.action] == s.cycles_after


def test_greedy_evaluations_are_the_distinct_modules_it_measured(greedy, kernel):
    states = replay(kernel, greedy.pipeline)
    digests = {states[0].digest}
    for st in states:  # the last state is where greedy measured everything and stopped
        digests.update(m.child.digest for m in st.legal_moves())
    assert greedy.evaluations == len(digests)
    assert greedy.evaluations <= 1 + sum(len(s.candidates) for s in greedy.steps)
    assert greedy.budget is None and greedy.failures == {}


def test_greedy_ends_without_stop_at_max_steps(kernel, options, greedy):
    r = search_kernel(kernel, SearchConfig("greedy", max_steps=1, options=options))
    assert [s.action for s in r.steps] == [greedy.pipeline.split(",")[0]]  # one pass, no stop
    assert r.pipeline == greedy.pipeline.split(",")[0]
    check_episode(r.steps, r.baseline_cycles, max_steps=1)
    assert r.best_cycles >= greedy.best_cycles


def test_greedy_never_picks_a_failing_candidate(kernel, monkeypatch, tmp_path):
    """Failures are counted and skipped, not fatal (fake evaluator: every vec_* fails)."""

    def fake(candidates, workers=0, **kw):
        out = []
        for c in candidates:
            bad = "vec_" in c.pipeline
            out.append(EvalResult(kernel=c.label, pipeline=c.pipeline, status="mismatch" if bad else "ok",
                                  backend="sim", arch="sm_89", estimate=True,
                                  cycles=None if bad else 100.0 - 10 * c.pipeline.count(","),
                                  equivalence="differ" if bad else "equal", error=None))
        return out

    monkeypatch.setattr(measure_mod, "evaluate_many", fake)
    r = search_kernel(kernel, SearchConfig("greedy", max_steps=3, options=EvalOptions(cache=tmp_path / "c")))
    assert r.error is None and "vec_" not in r.pipeline
    assert r.failures.get("mismatch", 0) >= 2
    assert sum(r.failures.values()) < r.evaluations
    first = r.steps[0]
    assert first.candidates["vec_ld"] is None and first.candidates["vec_st"] is None


# ---------------------------------------------------------------------------
# beam and exhaustive


def test_beam_is_at_least_as_good_as_greedy(kernel, options, beam3):
    g3 = search_kernel(kernel, SearchConfig("greedy", max_steps=3, options=options))
    assert beam3.error is None
    assert beam3.best_cycles <= g3.best_cycles <= beam3.baseline_cycles
    assert beam3.evaluations >= g3.evaluations  # width 4 measures at least greedy's first step and more
    check_episode(beam3.steps, beam3.baseline_cycles, max_steps=3)
    passes = [s.action for s in beam3.steps if s.action != STOP]
    assert passes == [p for p in beam3.pipeline.split(",") if p]
    assert beam3.steps[-1].cycles_after == beam3.best_cycles


def test_beam_width_one_is_greedy(kernel, options, beam3):
    b1 = search_kernel(kernel, SearchConfig("beam", max_steps=3, beam_width=1, options=options))
    g3 = search_kernel(kernel, SearchConfig("greedy", max_steps=3, options=options))
    assert b1.best_cycles == g3.best_cycles
    assert beam3.best_cycles <= b1.best_cycles


def test_exhaustive_beats_every_single_pass(kernel, options, exhaustive2):
    assert exhaustive2.error is None and exhaustive2.note is None  # no budget: an oracle
    root = State.root(kernel)
    m = Meter(options)
    singles = m.measure([mv.child for mv in root.legal_moves()])
    ok = [r.cycles for r in singles if r.ok]
    assert ok and exhaustive2.best_cycles <= min(ok)
    assert exhaustive2.best_cycles <= exhaustive2.baseline_cycles
    # ... and every two-pass pipeline: greedy with two steps cannot beat it
    g2 = search_kernel(kernel, SearchConfig("greedy", max_steps=2, options=options))
    assert exhaustive2.best_cycles <= g2.best_cycles
    assert len(exhaustive2.pipeline.split(",")) <= 2
    check_episode(exhaustive2.steps, exhaustive2.baseline_cycles, max_steps=2)


def test_exhaustive_counts_distinct_modules(kernel, exhaustive2):
    root = State.root(kernel)
    level1 = [m.child for m in root.legal_moves()]
    digests = {root.digest} | {c.digest for c in level1}
    for c in level1:
        digests.update(m.child.digest for m in c.legal_moves())
    # every reachable module within two passes, each measured once (none failed on this kernel)
    assert exhaustive2.failures == {}
    assert exhaustive2.evaluations == len(digests)


def test_exhaustive_under_a_budget_says_it_is_no_oracle(kernel, options, exhaustive2):
    r = search_kernel(kernel, SearchConfig("exhaustive", max_steps=2, budget=5, options=options))
    assert r.evaluations == 5 and r.budget == 5
    assert r.note and "budget" in r.note
    assert r.best_cycles >= exhaustive2.best_cycles


# ---------------------------------------------------------------------------
# random search (max_steps=2: within what the exhaustive search measured, so cheap)


def test_random_respects_the_budget(kernel, options, exhaustive2):
    for n in (1, 4, 10):
        r = search_kernel(kernel, SearchConfig("random", budget=n, seed=3, max_steps=2, options=options))
        assert r.error is None and r.budget == n
        assert 1 <= r.evaluations <= n
        assert r.best_cycles <= r.baseline_cycles


def test_random_is_reproducible_with_the_same_seed(kernel, options, exhaustive2):
    cfg = dict(budget=10, max_steps=2, options=options)
    a = search_kernel(kernel, SearchConfig("random", seed=7, **cfg))
    b = search_kernel(kernel, SearchConfig("random", seed=7, **cfg))
    assert a.pipeline == b.pipeline and a.best_cycles == b.best_cycles and a.evaluations == b.evaluations
    assert [(s.episode, s.pipeline, s.action) for s in a.steps] == [(s.episode, s.pipeline, s.action)
                                                                     for s in b.steps]
    c = search_kernel(kernel, SearchConfig("random", seed=8, **cfg))
    assert [(s.pipeline, s.action) for s in c.steps] != [(s.pipeline, s.action) for s in a.steps]


def test_random_episodes_are_valid_rollouts(kernel, options, exhaustive2):
    r = search_kernel(kernel, SearchConfig("random", budget=12, seed=1, max_steps=2, options=options))
    eps = episodes(r.steps)
    assert len(eps) >= 2 and [e[0].episode for e in eps] == list(range(len(eps)))
    for e in eps:
        check_episode(e, r.baseline_cycles, max_steps=2)
        assert e[0].action != STOP  # stop only after the first pass
        assert all(s.strategy == "random" and s.kernel == KERNEL for s in e)


def test_budget_greedy_gives_random_greedys_evaluation_count(kernel, options, exhaustive2):
    g2 = search_kernel(kernel, SearchConfig("greedy", max_steps=2, options=options))
    r = search_kernel(kernel, SearchConfig("random", budget="greedy", max_steps=2, options=options))
    assert r.error is None
    assert r.budget == g2.evaluations
    assert 1 <= r.evaluations <= g2.evaluations


def test_random_best_pipeline_is_in_its_trajectory(kernel, options):
    r = search_kernel(kernel, SearchConfig("random", budget=10, seed=0, options=options))
    assert r.pipeline
    reached = {(f"{s.pipeline},{s.action}" if s.pipeline else s.action) for s in r.steps if s.action != STOP}
    assert r.pipeline in reached


def test_search_config_refuses_unknown_strategy_and_budget():
    with pytest.raises(ValueError, match="unknown strategy"):
        SearchConfig("annealing")
    with pytest.raises(ValueError, match="budget"):
        SearchConfig("random", budget="lots")


# ---------------------------------------------------------------------------
# search_kernel never raises


def test_unparsable_kernel_is_a_result_with_an_error(options):
    for strategy in ("greedy", "beam", "random", "exhaustive"):
        r = search_kernel(Candidate("this is not ptx\n", name="bad.ptx"), SearchConfig(strategy, options=options))
        assert isinstance(r, KernelResult)
        assert r.error and "ParseError" in r.error and "bad.ptx:1:1" in r.error
        assert "\n" not in r.error
        assert r.kernel == "bad.ptx" and r.strategy == strategy
        assert r.evaluations == 0 and r.improvement_pct is None and r.steps == []


def test_failing_baseline_is_a_result_with_an_error(kernel, monkeypatch, tmp_path):
    def fake(candidates, workers=0, **kw):
        return [EvalResult(kernel=c.label, pipeline=c.pipeline, status="ptxas", backend="sim", arch="sm_89",
                           estimate=True, error="fake ptxas error") for c in candidates]

    monkeypatch.setattr(measure_mod, "evaluate_many", fake)
    r = search_kernel(kernel, SearchConfig("greedy", options=EvalOptions(cache=tmp_path / "c")))
    assert r.error and r.error.startswith("baseline ptxas")
    assert r.evaluations == 1 and r.failures == {"ptxas": 1}
    assert r.pipeline == "" and r.improvement_pct is None


# ---------------------------------------------------------------------------
# summarize


def _kr(name, base, best, **kw) -> KernelResult:
    return KernelResult(name, "fam", "greedy", baseline_cycles=base, best_cycles=best, **kw)


def test_summarize_statistics_of_the_improvements():
    results = [
        _kr("a", 100.0, 90.0, pipeline="vec_ld", evaluations=10, cache_hits=10),        # +10%
        _kr("b", 200.0, 160.0, pipeline="vec_ld,cache_cg", evaluations=20, cache_hits=0),  # +20%
        _kr("c", 100.0, 105.0, pipeline="cache_cg", evaluations=5, cache_hits=5),       # -5%
        _kr("d", 100.0, 50.0, pipeline="maxnreg_64", evaluations=5, cache_hits=0,
            failures={"mismatch": 2}),                                                   # +50%
        _kr("e", 100.0, 100.0, evaluations=0, error="ParseError: boom"),               # left out
    ]
    s = summarize(results)
    imp = s["improvement_pct"]
    assert imp["mean"] == pytest.approx(18.75)
    assert imp["median"] == pytest.approx(15.0)
    assert imp["best"] == pytest.approx(50.0) and imp["worst"] == pytest.approx(-5.0)
    assert s["kernels"] == 5 and s["searched"] == 4 and s["errors"] == 1 and s["improved"] == 3
    geo = math.exp((math.log(100 / 90) + math.log(200 / 160) + math.log(100 / 105) + math.log(2)) / 4)
    assert s["geomean_speedup"] == pytest.approx(geo)
    assert s["pass_frequency"] == {"vec_ld": 2, "cache_cg": 2, "maxnreg_64": 1}
    assert s["evaluations"] == 40 and s["evaluations_per_kernel"] == pytest.approx(8.0)
    assert s["cache_hits"] == 15 and s["cache_hit_rate"] == pytest.approx(15 / 40)
    assert s["failures"] == {"mismatch": 2}
    json.dumps(s)  # reportable as is


def test_summarize_with_nothing_searched():
    s = summarize([KernelResult("x", None, "greedy", error="ParseError: boom")])
    assert s["searched"] == 0 and s["errors"] == 1
    assert s["improvement_pct"] == {"mean": None, "median": None, "best": None, "worst": None}
    assert s["cache_hit_rate"] is None and s["geomean_speedup"] is None
    assert summarize([])["kernels"] == 0


# ---------------------------------------------------------------------------
# trajectories (JSON Lines)


def test_reward_is_log_speedup_minus_step_cost():
    assert reward(200.0, 100.0) == pytest.approx(math.log(2) - 0.005)
    assert reward(100.0, 100.0) == pytest.approx(-STEP_COST)
    assert reward(100.0, 200.0, step_cost=0.0) == pytest.approx(-math.log(2))


def test_jsonl_round_trip(greedy, tmp_path):
    p = tmp_path / "t.jsonl"
    assert write_jsonl(greedy.steps, p) == len(greedy.steps)
    lines = p.read_text().splitlines()
    assert len(lines) == len(greedy.steps)
    first = json.loads(lines[0])
    assert first["schema"] == 1 and first["kernel"] == KERNEL and first["action_index"] == \
        ACTIONS.index(first["action"])
    back = list(read_jsonl(p))
    assert back == greedy.steps
    assert write_jsonl(greedy.steps[:1], p, append=True) == 1
    assert list(read_jsonl(p)) == greedy.steps + greedy.steps[:1]


def test_jsonl_wrong_schema_names_file_and_line(greedy, tmp_path):
    p = tmp_path / "t.jsonl"
    write_jsonl(greedy.steps[:2], p)
    bad = json.loads(p.read_text().splitlines()[0])
    bad["schema"] = 2
    with open(p, "a") as f:
        f.write(json.dumps(bad) + "\n")
    with pytest.raises(ValueError, match=re.escape(f"{p}:3: ") + ".*schema"):
        list(read_jsonl(p))


@pytest.mark.parametrize("line", ["{not json", '{"schema": 1, "kernel": "k"}'])
def test_jsonl_bad_record_names_file_and_line(tmp_path, line):
    p = tmp_path / "t.jsonl"
    p.write_text("\n" + line + "\n")
    with pytest.raises(ValueError, match=re.escape(f"{p}:2: bad trajectory record")):
        list(read_jsonl(p))


@pytest.mark.parametrize("line", ["[1, 2]", "null"])
def test_jsonl_non_object_record_names_file_and_line(tmp_path, line):
    p = tmp_path / "t.jsonl"
    p.write_text(line + "\n")
    with pytest.raises(ValueError, match=re.escape(f"{p}:1: bad trajectory record")):
        list(read_jsonl(p))


def test_episodes_group_and_order(greedy):
    base = greedy.steps
    steps = ([replace(s, episode=1) for s in base] + [replace(s, kernel="other") for s in base]
             + list(base))
    random.Random(0).shuffle(steps)
    eps = episodes(steps)
    assert len(eps) == 3
    for e in eps:
        assert [s.step for s in e] == list(range(len(base)))
        assert len({(s.kernel, s.strategy, s.episode) for s in e}) == 1
    keys = {(e[0].kernel, e[0].episode) for e in eps}
    assert keys == {(KERNEL, 0), (KERNEL, 1), ("other", 0)}
    assert episodes([]) == []
