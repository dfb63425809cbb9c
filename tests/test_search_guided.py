"""Guided search (a ranker's top-k plus an exploration slot) and the ranker file.

The evaluator is replaced by a deterministic fake (cycles from a hash of the
pipeline), so the tests exercise the strategy's rules -- never slower than the
baseline, at most ``top_k + 1`` measurements per step, an action the ranker
never saw still reachable -- without ptxas; the rankers are stand-ins that
score by a table, except where a trained ranker's file round trip is tested.
"""

from __future__ import annotations

import hashlib
import json
import pickle

import numpy as np
import pytest
from click.testing import CliRunner

import ptxopt.search.measure as measure_mod
from ptxopt.cli import cli
from ptxopt.evaluate import Candidate, EvalResult
from ptxopt.search import EvalOptions, SearchConfig, State, search_kernel
from ptxopt.search.guided import choose
from ptxopt.search.ranker import FORMAT, VERSION, RankerError, load, train
from ptxopt.search.trajectory import Step

KERNEL = "gemm_tile_2x2x4"


def _pseudo(pipeline: str, seed: int) -> float:
    h = hashlib.sha256(f"{seed}:{pipeline}".encode()).digest()
    return int.from_bytes(h[:4], "little") / 2**32


def fake_evaluator(cycles_of):
    def fake(candidates, workers=0, **kw):
        return [EvalResult(kernel=c.label, pipeline=c.pipeline, status="ok", backend="sim", arch="sm_89",
                           estimate=True, cycles=float(cycles_of(c.pipeline)), equivalence="equal", registers=20,
                           objective="latency") for c in candidates]
    return fake


class TableRanker:
    """Scores known actions from a table (unknown ones are not scored)."""

    def __init__(self, scores: dict[str, float]):
        self.table = dict(scores)
        self.actions = tuple(scores)

    def knows(self, action):
        return action in self.table

    def score(self, state, result, moves):
        return {m.action: self.table[m.action] for m in moves if m.legal and m.action in self.table}


@pytest.fixture
def kernel() -> Candidate:
    return Candidate.from_corpus(KERNEL)


def _guided(kernel, monkeypatch, cache, ranker, cycles_of, **kw):
    monkeypatch.setattr(measure_mod, "evaluate_many", fake_evaluator(cycles_of))
    monkeypatch.setattr("ptxopt.search.run.ranker_for", lambda name: ranker)
    cfg = SearchConfig("guided", policy="stand-in", options=EvalOptions(cache=cache), **kw)
    return search_kernel(kernel, cfg)


@pytest.mark.parametrize("seed", range(6))
def test_guided_never_returns_a_pipeline_slower_than_the_baseline(kernel, monkeypatch, tmp_path, seed):
    actions = [m.action for m in State.root(kernel).legal_moves()]
    rng = np.random.default_rng(seed)
    ranker = TableRanker({a: float(rng.normal()) for a in actions})  # confident and wrong as often as right
    base = 1000.0
    r = _guided(kernel, monkeypatch, tmp_path / "c.sqlite", ranker,
                lambda p: base if not p else base * (0.7 + 0.8 * _pseudo(p, seed)))
    assert r.error is None
    assert r.best_cycles <= r.baseline_cycles == base
    worse = _guided(kernel, monkeypatch, tmp_path / "w.sqlite", ranker, lambda p: base * (1 + 0.1 * p.count(",") + (p != "")))
    assert worse.pipeline == "" and worse.best_cycles == base


@pytest.mark.parametrize("top_k", [1, 2, 3])
def test_guided_measures_at_most_top_k_plus_one_children_per_step(kernel, monkeypatch, tmp_path, top_k):
    actions = [m.action for m in State.root(kernel).legal_moves()]
    ranker = TableRanker({a: 0.01 * (i + 1) for i, a in enumerate(actions)})
    r = _guided(kernel, monkeypatch, tmp_path / "c.sqlite", ranker, lambda p: 1000.0 / (1 + p.count(",") + (p != "")),
                top_k=top_k, max_steps=4)
    assert r.steps, "the fake rewards every pass: guided takes steps"
    assert all(len(s.candidates) <= top_k + 1 for s in r.steps)
    assert r.evaluations <= 1 + len(r.steps) * (top_k + 1)
    first = r.steps[0]  # the best-scored actions are among the measured ones
    best = sorted(actions, key=lambda a: -ranker.table[a])[:top_k]
    assert set(best) <= set(first.candidates)


def test_an_action_unknown_to_the_ranker_is_reachable(kernel, monkeypatch, tmp_path):
    legal = [m.action for m in State.root(kernel).legal_moves()]
    hidden = legal[-1]
    ranker = TableRanker({a: 0.05 for a in legal if a != hidden})  # trained before `hidden` existed
    r = _guided(kernel, monkeypatch, tmp_path / "c.sqlite", ranker,
                lambda p: 500.0 if p.split(",")[0] == hidden else 1000.0 + p.count(",") + (p != ""))
    assert r.pipeline.split(",")[0] == hidden and r.best_cycles == 500.0


def test_an_unknown_action_is_measured_even_when_nothing_known_is_predicted_to_gain(kernel):
    moves = State.root(kernel).legal_moves()
    ranker = TableRanker({m.action: -1.0 for m in moves[1:]})
    pick = choose(moves, ranker.score(None, None, moves), top_k=2, threshold=0.001, rng=np.random.default_rng(0))
    assert [m.action for m in pick] == [moves[0].action]
    known = TableRanker({m.action: -1.0 for m in moves})
    assert choose(moves, known.score(None, None, moves), top_k=2, threshold=0.001,
                  rng=np.random.default_rng(0)) == []  # nothing predicted to gain, nothing unknown: stop


def _steps(n_kernels=6):
    """Synthetic greedy steps: at every state vec_ld gains, the others lose (old records: no context)."""
    from ptxopt.analysis.features import FEATURE_NAMES

    steps = []
    for k in range(n_kernels):
        obs = [float(k + i) for i in range(len(FEATURE_NAMES))] + [0.0, 0.0]
        cands = {"vec_ld": 900.0, "vec_st": 1010.0, "cache_cg": 1100.0, "split_ld": None}
        steps.append(Step(kernel=f"k{k}", strategy="greedy", episode=0, step=0, pipeline="", observation=obs,
                          action_mask=[1] * 4, action="vec_ld", cycles_before=1000.0, cycles_after=900.0, reward=0.1,
                          candidates=cands))
    return steps


@pytest.mark.slow
def test_a_trained_ranker_round_trips_and_ranks_what_it_learned(tmp_path):
    r = train(_steps(), max_iter=30)
    path = tmp_path / "r.ranker"
    r.save(path)
    back = load(path)
    assert back.actions == r.actions and "vec_ld" in back.actions
    from ptxopt.search.ranker import rows_of

    X, y, idx = rows_of(_steps(2), back.actions)
    pred = dict(zip((a for _, _, a in idx[:4]), back.score_rows(X[:4])))
    assert max(pred, key=pred.get) == "vec_ld"


def test_old_trajectory_records_stay_readable_and_new_keys_round_trip():
    s = _steps(1)[0]
    d = s.to_json()
    assert "context" not in d and "verdicts" not in d  # absent when unknown: the old format
    s2 = Step.from_json(json.loads(json.dumps({**d, "context": {"registers": 32}, "objective": "throughput"})))
    assert s2.context == {"registers": 32} and s2.objective == "throughput"


@pytest.mark.parametrize("content", [b"junk", pickle.dumps({"format": "other"}),
                                     pickle.dumps({"format": FORMAT, "version": VERSION + 1}),
                                     pickle.dumps({"format": FORMAT, "version": VERSION, "actions": ["vec_ld"],
                                                   "feature_names": ["x"], "model": None})])
def test_a_bad_ranker_file_is_a_clear_error_exit_2(tmp_path, content):
    path = tmp_path / "bad.ranker"
    path.write_bytes(content)
    with pytest.raises(RankerError):
        load(path)
    res = CliRunner().invoke(cli, ["search", KERNEL, "--strategy", "guided", "--policy", str(path),
                                   "--cache", str(tmp_path / "c.sqlite")])
    assert res.exit_code == 2, res.output
    assert "ranker" in res.output and "Traceback" not in res.output


def test_guided_without_a_ranker_is_refused(tmp_path):
    res = CliRunner().invoke(cli, ["search", KERNEL, "--strategy", "guided", "--cache", str(tmp_path / "c.sqlite")])
    assert res.exit_code == 2 and "ranker" in res.output
    with pytest.raises(ValueError, match="ranker"):
        SearchConfig("guided")
