"""Guided search (a ranker's top-k plus exploration slots) and the ranker file.

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

import ptxopt.search.meter as measure_mod
from ptxopt.cli import cli
from ptxopt.evaluate import Candidate, EvalResult
from ptxopt.search import EvalOptions, SearchConfig, State, search_kernel
from ptxopt.search.guided import choose
from ptxopt.search.rank_features import pass_kind
from ptxopt.search.ranker import FORMAT, VERSION, RankerError, feature_names, load, train
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


class _Stub:
    def predict(self, X):
        return np.zeros(len(X))


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
    first = r.steps[0]  # the best-scored action of each pass (its first variant) are among the measured ones
    firsts = list({pass_kind(a): a for a in sorted(actions, key=lambda a: ranker.table[a])}.values())
    best = sorted(firsts, key=lambda a: -ranker.table[a])[:top_k]
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


def test_the_predicted_gains_decide_whether_to_measure_the_order_decides_what(kernel):
    moves = State.root(kernel).legal_moves()
    names = [m.action for m in moves]
    order = {a: float(i) for i, a in enumerate(names)}  # the last action first
    pick = choose(moves, order, top_k=2, threshold=0.001, rng=np.random.default_rng(0),
                  gains={a: (0.01 if a == names[0] else -1.0) for a in names})
    assert [m.action for m in pick[:2]] == names[::-1][:2]  # one action predicted to gain opens the state
    assert choose(moves, order, top_k=2, threshold=0.001, rng=np.random.default_rng(0),
                  gains=dict.fromkeys(names, -1.0)) == []  # none predicted to gain, none unknown: stop


def test_guided_uses_the_rankers_own_top_k_unless_told(kernel, monkeypatch, tmp_path):
    actions = [m.action for m in State.root(kernel).legal_moves()]
    ranker = TableRanker({a: 0.01 * (i + 1) for i, a in enumerate(actions)})
    ranker.top_k, ranker.threshold = 1, 0.0
    cycles = lambda p: 1000.0 / (1 + p.count(",") + (p != ""))  # noqa: E731
    own = _guided(kernel, monkeypatch, tmp_path / "a.sqlite", ranker, cycles, max_steps=3)
    assert own.steps and all(len(s.candidates) <= 2 for s in own.steps)
    told = _guided(kernel, monkeypatch, tmp_path / "b.sqlite", ranker, cycles, max_steps=3, top_k=3)
    assert max(len(s.candidates) for s in told.steps) == 4


@pytest.mark.parametrize("action, threads, cap", [("maxnreg_64", 256, 64.0), ("launch_bounds_2", 256, 128.0),
                                                  ("launch_bounds{minblocks=4}", 128, 128.0),
                                                  ("launch_bounds_2", 1024, 32.0), ("vec_ld", 256, None),
                                                  ("no_such_action", 256, None)])
def test_register_cap_of_an_action(action, threads, cap):
    from ptxopt.search.rank_features import register_cap

    got = register_cap(action, float(threads))
    assert (np.isnan(got) if cap is None else got == cap)


@pytest.mark.parametrize("a, b, threads, same", [("maxnreg_64", "launch_bounds{minblocks=4}", 256, True),
                                                   ("maxnreg_128", "launch_bounds_2", 256, True),
                                                   ("maxnreg_128", "launch_bounds{minblocks=4}", 256, False),
                                                   ("maxnreg_255", "maxnreg_128", 256, False),
                                                   ("maxnreg_64", "launch_bounds_2", None, False)])
def test_register_caps_asking_for_the_same_limit_are_one_outcome_class(a, b, threads, same):
    from ptxopt.search.rank_features import outcome_class

    ctx = {"block_threads": float(threads) if threads else float("nan"), "registers": 40.0}
    ka, kb = outcome_class(a, ctx), outcome_class(b, ctx)
    assert ka is not None and (ka == kb) == same
    assert outcome_class("vec_ld", ctx) is None and outcome_class("unroll_4", ctx) is None


def test_order_puts_a_second_member_of_an_outcome_class_after_every_other_action():
    from ptxopt.search.guided import order

    moves = [type("M", (), {"action": a})() for a in ("lb", "m", "x", "y")]
    scores = {"lb": 4.0, "m": 3.0, "x": 2.0, "y": 1.0}
    classes = {"lb": "register cap 64", "m": "register cap 64", "x": None, "y": None}
    got = [m.action for m in order(moves, scores, None, np.random.default_rng(0), classes)]
    assert got == ["lb", "x", "y", "m"]
    assert [m.action for m in order(moves, scores, None, np.random.default_rng(0))] == ["lb", "m", "x", "y"]
    for seed in range(20):  # the exploration slot takes an outcome not measured yet while there is one
        pick = choose(moves, scores, top_k=1, threshold=0.0, rng=np.random.default_rng(seed), explore=2,
                      classes=classes, at_root=True)
        assert [m.action for m in pick[:1]] == ["lb"] and {m.action for m in pick[1:]} == {"x", "y"}


def test_order_puts_a_passs_second_variant_after_every_passs_first():
    from ptxopt.search.guided import order, pass_kinds

    acts = ("maxnreg_255", "maxnreg_128", "maxnreg_64", "prefetch_L1", "vec_st", "unroll_2", "unroll_4")
    moves = [type("M", (), {"action": a})() for a in acts]
    scores = {a: float(len(acts) - i) for i, a in enumerate(acts)}
    kinds = pass_kinds(acts)
    assert kinds["maxnreg_64"] == kinds["maxnreg_255"] != kinds["prefetch_L1"] and pass_kind("stop") is None
    got = [m.action for m in order(moves, scores, None, np.random.default_rng(0), None, kinds)]
    assert got == ["maxnreg_255", "prefetch_L1", "vec_st", "unroll_2", "maxnreg_128", "maxnreg_64", "unroll_4"]
    # an outcome class's repeat still goes last, after a pass's other variants
    classes = {"maxnreg_128": "register cap 128", "maxnreg_64": "register cap 128"}
    got = [m.action for m in order(moves, scores, None, np.random.default_rng(0), classes, kinds)]
    assert got[-1] == "maxnreg_64" and got[4:6] == ["maxnreg_128", "unroll_4"]
    for seed in range(20):  # an exploration slot takes a pass not measured yet while there is one
        pick = choose(moves, scores, top_k=1, threshold=0.0, rng=np.random.default_rng(seed), explore=3,
                      kinds=kinds, at_root=True)
        assert pick[0].action == "maxnreg_255" and len({kinds[m.action] for m in pick}) == 4


def test_live_guided_search_does_not_measure_two_directives_for_one_register_limit(monkeypatch, tmp_path):
    conv = Candidate.from_corpus("gen_conv1d_02")  # 256 threads: launch_bounds_2 asks for 128, as maxnreg_128
    actions = [m.action for m in State.root(conv).legal_moves()]
    assert {"launch_bounds_2", "maxnreg_128"} <= set(actions)
    other = next(a for a in actions if not a.startswith(("maxnreg", "launch_bounds")))
    table = {a: 0.0 for a in actions} | {"launch_bounds_2": 3.0, "maxnreg_128": 2.0, other: 1.0}
    for seed in range(3):
        r = _guided(conv, monkeypatch, tmp_path / f"c{seed}.sqlite", TableRanker(table), lambda p: 1000.0,
                    top_k=2, max_steps=1, seed=seed)
        first = r.steps[0].candidates
        assert {"launch_bounds_2", other} <= set(first) and "maxnreg_128" not in first and len(first) == 3


def test_tuning_keeps_the_evaluations_within_the_cap():
    from ptxopt.search.ranker_replay import EVAL_CAP, choose_setting

    table = {("prior", 1, 1, 0.0): (0.5, 0.1), ("prior", 2, 1, 0.0): (0.7, EVAL_CAP),
             ("trees", 4, 1, 0.0): (0.95, EVAL_CAP + 0.1)}
    assert choose_setting(table) == ("prior", 2, 1, 0.0)
    assert choose_setting({("prior", 4, 1, 0.0): (0.9, 0.9), ("trees", 1, 1, 0.0): (0.1, 0.5)}) == \
        ("trees", 1, 1, 0.0)  # none within: the cheapest


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
    gains = dict(zip((a for _, _, a in idx[:4]), back.gain_rows(X[:4])))
    assert gains["vec_ld"] > 0.05 > 10 * gains["cache_cg"]  # option values: vec_ld's ~0.1, a loss's 0
    assert (back.top_k, back.explore, back.threshold) == (r.top_k, r.explore, r.threshold)


@pytest.mark.slow
def test_train_tunes_top_k_and_threshold_on_its_own_groups():
    steps = _steps(6)
    from ptxopt.search.ranker_replay import train_tuned

    tuned = train_tuned(steps, {f"k{i}": "ab"[i % 2] for i in range(6)}, max_iter=10, tune_iter=5)
    grid = tuned.trained_on["tuned"]["grid order/k/explore/threshold (gain, evaluations: fractions of greedy's)"]
    order = tuned.trained_on["order_model"]
    assert order == tuned.trained_on["tuned"]["order"]
    assert f"{order}/{tuned.top_k}/{tuned.explore}/{tuned.threshold:g}" in grid
    for o in ("prior", "trees"):
        assert grid[f"{o}/6/4/-inf"][0] > 0  # measuring everything, the held-out fold's replay finds vec_ld's gain
        assert grid[f"{o}/6/4/-inf"][1] > grid[f"{o}/1/1/0.005"][1]  # and pays for it


def test_old_trajectory_records_stay_readable_and_new_keys_round_trip():
    s = _steps(1)[0]
    d = s.to_json()
    assert "context" not in d and "verdicts" not in d  # absent when unknown: the old format
    s2 = Step.from_json(json.loads(json.dumps({**d, "context": {"registers": 32}, "objective": "throughput"})))
    assert s2.context == {"registers": 32} and s2.objective == "throughput"


@pytest.mark.parametrize("content", [b"junk", pickle.dumps({"format": "other"}),
                                     pickle.dumps({"format": FORMAT, "version": VERSION + 1}),
                                     pickle.dumps({"format": FORMAT, "version": VERSION, "actions": ["vec_ld"],
                                                   "feature_names": ["x"], "model": None}),
                                     pickle.dumps({"format": FORMAT, "version": VERSION, "actions": ["vec_ld"],
                                                   "feature_names": feature_names(["vec_ld"]), "model": _Stub(),
                                                   "top_k": 2, "threshold": 0.0})])  # no gain model
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


def test_policy_takes_a_ranker_whose_top_choice_is_applied_unmeasured(tmp_path, monkeypatch):
    from ptxopt.evaluate import Candidate as C
    from ptxopt.triton.choose import PolicyPipelines, RankerPipelines, policy_chooser

    r = train(_steps(4), max_iter=5)
    path = tmp_path / "mine.ranker"
    r.save(path)
    chooser = policy_chooser(path)
    assert isinstance(chooser, RankerPipelines) and chooser.key.startswith("ranker=")
    ptx = C.from_corpus(KERNEL).ptx
    legal = [m.action for m in State.root(C(ptx, name="k")).legal_moves()]
    monkeypatch.setattr(chooser.ranker, "predict",
                        lambda state, result, moves: ({legal[1]: 1.0, legal[0]: 0.5}, {legal[1]: 0.02, legal[0]: 0.0}))
    pipe, why = chooser.choose("k", ptx)
    assert str(pipe) == legal[1] and "not measured" in why
    monkeypatch.setattr(chooser.ranker, "top_k", 0)  # its order lost to random on its folds: no guess applied
    assert chooser.choose("k", ptx)[0] is None
    monkeypatch.setattr(chooser.ranker, "top_k", 2)
    monkeypatch.setattr(chooser.ranker, "predict", lambda state, result, moves: ({legal[0]: 1.0}, {legal[0]: -0.1}))
    assert chooser.choose("k", ptx)[0] is None
    from ptxopt.search.ranker import committed_rankers

    for name in committed_rankers():  # a committed ranker by name, as search --policy finds it
        assert isinstance(policy_chooser(name), RankerPipelines)


def test_optimize_takes_a_ranker_by_the_name_the_hook_and_cli_take(monkeypatch):
    """optimize(policy=NAME) resolves NAME as enable(policy=) does: a committed ranker is a ranker (not an unknown
    checkpoint), and its pick goes through optimize's checks like any pipeline."""
    import ptxopt
    from ptxopt.evaluate import Candidate as C
    from ptxopt.search import policy_choice
    from ptxopt.search.ranker import committed_rankers

    names = committed_rankers()
    assert names, "a ranker is committed"
    picked = []
    real = policy_choice.RankerPipelines.choose

    def spy(self, name, ptx):
        picked.append(real(self, name, ptx))
        return picked[-1]

    monkeypatch.setattr(policy_choice.RankerPipelines, "choose", spy)
    res = ptxopt.optimize(C.from_corpus(KERNEL).ptx, policy=names[0], min_improvement=0)
    assert len(picked) == 1
    pipe = picked[0][0]
    assert str(res.pipeline) == (str(pipe) if pipe is not None else "")
