"""ptxopt_rl.env: the Gymnasium environment over pass pipelines.

Every environment here evaluates through a temporary SQLite cache shared by
the rl test modules of this session (never ~/.cache), on the smallest
corpus kernels; only the failure test uses a fake evaluator (and its own
cache, which the fake never touches).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

pytest.importorskip("gymnasium")
pytest.importorskip("torch")

import ptxopt.search.meter as measure_mod  # noqa: E402
from ptxopt.evaluate import Candidate, EvalResult  # noqa: E402
from ptxopt.search import ACTIONS, N_ACTIONS, STEP_COST, STOP, STOP_INDEX, EvalOptions, State, observation_names  # noqa: E402,E501
from ptxopt_rl.env import PipelineEnv, actions_to_pipeline, pipeline_to_actions  # noqa: E402

K2, K4 = "gemm_tile_2x2x2", "gemm_tile_2x2x4"
A = {name: i for i, name in enumerate(ACTIONS)}


@pytest.fixture(scope="module")
def options(rl_options) -> EvalOptions:
    return rl_options  # one cache for every rl test module of the session (tests/conftest.py)


@pytest.fixture
def env(options) -> PipelineEnv:
    return PipelineEnv([K2, K4], options=options, max_steps=6)


def legal_passes(mask) -> list[int]:
    return [int(i) for i in np.flatnonzero(mask) if i != STOP_INDEX]


def test_action_space_is_the_action_list_then_stop(env):
    assert env.action_space.n == N_ACTIONS == len(ACTIONS)
    assert ACTIONS[STOP_INDEX] == STOP == ACTIONS[-1]


@pytest.mark.filterwarnings("ignore:.*infinity:UserWarning")  # the Box is unbounded by design
def test_gymnasium_env_checker_passes(env):
    """gymnasium's checker steps ``action_space.sample()`` -- sometimes drawn
    before the ``reset`` it steps after. A masked action raises by design, so
    samples come from the actions legal both now and at every kernel's root
    (``stop`` always is): what an agent that keeps the mask would do, and the
    check no longer depends on which action a seed happens to draw."""
    import gymnasium as gym
    from gymnasium.utils.env_checker import check_env

    class MaskedSampling(gym.spaces.Discrete):
        def sample(self, mask=None, probability=None):
            if mask is None and probability is None:
                legal = np.logical_and.reduce([env.root(k).action_mask() for k in env.kernels])
                if env.state is not None:
                    legal &= env.action_mask()
                mask = legal.astype(np.int8)
            return super().sample(mask=mask, probability=probability)

    env.action_space = MaskedSampling(N_ACTIONS)
    check_env(env.unwrapped, skip_render_check=True)


def test_needs_a_kernel(options):
    with pytest.raises(ValueError):
        PipelineEnv([], options=options)


def test_reset_observation_and_info(env):
    obs, info = env.reset(seed=0)
    assert env.observation_space.contains(obs)
    assert obs.shape == (len(observation_names()),)
    mask = info["action_mask"]
    assert isinstance(mask, np.ndarray) and mask.dtype == np.bool_ and mask.shape == (N_ACTIONS,)
    assert mask[STOP_INDEX]
    assert info["kernel"] in (K2, K4)
    assert isinstance(info["cycles"], float) and info["cycles"] > 0
    assert info["cycles"] == info["baseline_cycles"] == env.cycles == env.baseline
    assert info["pipeline"] == "" == env.pipeline()
    # the mask is the pass API's: the root state's own mask
    root = State.root(Candidate.from_corpus(info["kernel"]))
    assert np.array_equal(mask, root.action_mask())
    assert np.array_equal(obs, root.observation())
    assert obs[-1] == 0.0  # the step slot


@pytest.mark.parametrize("choice, expected", [(K2, K2), (K4, K4), ("corpus:" + K4, K4), (0, K2), (1, K4)])
def test_reset_option_picks_the_kernel(env, choice, expected):
    for seed in range(3):  # whatever the random pick would have been
        _, info = env.reset(seed=seed, options={"kernel": choice})
        assert info["kernel"] == expected
        assert env.state.kernel.label == expected and env.state.depth == 0


def test_kernels_have_their_own_observations_and_baselines(env):
    o2, i2 = env.reset(options={"kernel": K2})
    o4, i4 = env.reset(options={"kernel": K4})
    assert not np.array_equal(o2, o4)
    assert i2["cycles"] != i4["cycles"]


def test_reset_seed_is_deterministic(options):
    picks = []
    for _ in range(2):
        e = PipelineEnv([K2, K4], options=options)
        picks.append([e.reset(seed=s)[1]["kernel"] for s in range(8)])
    assert picks[0] == picks[1]
    assert set(picks[0]) == {K2, K4}  # both kernels get picked over 8 seeds


def test_masked_action_raises_and_leaves_the_episode_usable(env):
    obs, info = env.reset(options={"kernel": K2})
    masked = [i for i in range(N_ACTIONS) if not info["action_mask"][i]]
    assert masked, "gemm_tile_2x2x2's root should mask some passes"
    for a in masked:
        with pytest.raises(ValueError, match="masked"):
            env.step(a)
    for a in (-1, N_ACTIONS):
        with pytest.raises(ValueError):
            env.step(a)
    assert env.pipeline() == "" and env.steps == 0
    # still usable: a legal pass goes through
    a = legal_passes(info["action_mask"])[0]
    _, _, term, trunc, info2 = env.step(a)
    assert not term and not trunc and env.pipeline() == ACTIONS[a]


def test_stop_terminates_with_reward_zero(env):
    obs, info = env.reset(options={"kernel": K2})
    obs2, r, term, trunc, info2 = env.step(STOP_INDEX)
    assert r == 0.0 and term is True and trunc is False
    assert np.array_equal(obs, obs2) and info2["cycles"] == info["cycles"] and info2["pipeline"] == ""
    with pytest.raises(RuntimeError, match="reset"):
        env.step(STOP_INDEX)


def test_pass_reward_is_log_speedup_minus_step_cost(env):
    obs, info = env.reset(options={"kernel": K2})
    for a in legal_passes(info["action_mask"])[:4]:
        env.reset(options={"kernel": K2})
        obs2, r, term, trunc, info2 = env.step(a)
        assert "failed" not in info2
        assert r == pytest.approx(math.log(info["cycles"] / info2["cycles"]) - 0.005, abs=1e-12)
        assert not term and not trunc
        assert info2["pipeline"] == ACTIONS[a] and info2["baseline_cycles"] == info["cycles"]
        assert obs2[-1] == 1.0  # one step taken
        assert env.observation_space.contains(obs2)
    assert STEP_COST == 0.005


def test_a_step_changes_the_observation_and_the_mask(env):
    obs, info = env.reset(options={"kernel": K2})
    a = A["vec_st"]
    assert info["action_mask"][a]
    obs2, _, _, _, info2 = env.step(a)
    assert not np.array_equal(obs, obs2)
    assert not info2["action_mask"][a]  # vec_st again would change nothing / conflict
    assert info2["action_mask"][STOP_INDEX]
    assert np.array_equal(info2["action_mask"], env.state.action_mask())


def test_episode_truncates_after_max_steps(options):
    env = PipelineEnv([K2], options=options, max_steps=2)
    _, info = env.reset()
    flags = []
    for _ in range(2):
        a = legal_passes(info["action_mask"])[0]
        _, _, term, trunc, info = env.step(a)
        flags.append((term, trunc))
    assert flags == [(False, False), (False, True)]
    assert env.state.depth == 2
    with pytest.raises(RuntimeError):
        env.step(STOP_INDEX)
    # reset starts over
    obs, info = env.reset()
    assert env.pipeline() == "" and env.steps == 0 and obs[-1] == 0.0


def test_replay_reproduces_the_pipeline_and_the_rewards_telescope(env, options):
    _, info = env.reset(options={"kernel": K4})
    rewards = []
    for _ in range(3):
        a = legal_passes(info["action_mask"])[-1]
        _, r, term, trunc, info = env.step(a)
        rewards.append(r)
    pipeline, final = env.pipeline(), info["cycles"]
    assert len(pipeline.split(",")) == 3

    other = PipelineEnv([K2, K4], options=options)
    total, replayed = other.replay(pipeline, kernel=K4)
    assert other.pipeline() == pipeline
    assert replayed == pytest.approx(rewards, abs=1e-12)
    assert total == pytest.approx(sum(rewards), abs=1e-12)
    assert total == pytest.approx(math.log(info["baseline_cycles"] / final) - 0.005 * 3, abs=1e-9)
    assert other.cycles == final


def test_replay_of_the_empty_pipeline(env):
    total, rewards = env.replay("", kernel=K2)
    assert total == 0 and rewards == [] and env.pipeline() == ""


def test_replay_refuses_a_masked_pass(env):
    with pytest.raises(ValueError):
        env.replay("vec_st,vec_st", kernel=K2)


def test_actions_and_pipelines_round_trip(env):
    assert pipeline_to_actions("") == [STOP_INDEX]
    assert actions_to_pipeline([STOP_INDEX]) == ""
    assert pipeline_to_actions("vec_st,cache_ca") == [A["vec_st"], A["cache_ca"], STOP_INDEX]
    assert actions_to_pipeline([A["vec_st"], A["cache_ca"], STOP_INDEX]) == "vec_st,cache_ca"
    assert actions_to_pipeline([A["vec_ld"]]) == "vec_ld"
    assert actions_to_pipeline([A["vec_ld"], STOP_INDEX, A["vec_st"]]) == "vec_ld"  # stop ends it
    # an environment episode round-trips
    _, info = env.reset(options={"kernel": K2})
    taken = []
    for _ in range(2):
        a = legal_passes(info["action_mask"])[0]
        taken.append(a)
        _, _, _, _, info = env.step(a)
    assert pipeline_to_actions(env.pipeline()) == [*taken, STOP_INDEX]
    assert actions_to_pipeline(pipeline_to_actions(env.pipeline())) == env.pipeline()


def test_render_ansi(options):
    env = PipelineEnv([K2], options=options, render_mode="ansi")
    env.reset()
    text = env.render()
    assert K2 in text and "cycles" in text
    assert PipelineEnv([K2], options=options).render() is None


def test_failing_candidate_leaves_the_state_and_masks_the_action(monkeypatch, tmp_path):
    """Fake evaluator: the unoptimised kernel is fine, every pipeline fails."""
    calls = []

    def fake(candidates, workers=0, **kw):
        calls.extend(c.pipeline for c in candidates)
        return [EvalResult(kernel=c.label, pipeline=c.pipeline, status="mismatch" if c.pipeline else "ok",
                           backend="sim", arch="sm_89", estimate=True, cycles=None if c.pipeline else 100.0,
                           equivalence="differ" if c.pipeline else "identical",
                           error="fake mismatch" if c.pipeline else None) for c in candidates]

    monkeypatch.setattr(measure_mod, "evaluate_many", fake)
    env = PipelineEnv([K2], options=EvalOptions(cache=tmp_path / "eval.sqlite"), max_steps=3)
    obs, info = env.reset()
    assert info["cycles"] == 100.0 and calls == [""]
    a = A["vec_st"]
    assert info["action_mask"][a]
    obs2, r, term, trunc, info2 = env.step(a)
    assert r == 0.0 and not term and not trunc
    assert info2["failed"] == "mismatch"
    assert np.array_equal(obs, obs2) and env.pipeline() == "" and env.cycles == 100.0
    assert not info2["action_mask"][a] and not env.action_mask()[a]
    # only that action is masked; the rest of the mask is the state's
    expected = info["action_mask"].copy()
    expected[a] = False
    assert np.array_equal(info2["action_mask"], expected)
    with pytest.raises(ValueError, match="masked"):
        env.step(a)
    # the failure is remembered for this state across episodes
    _, info3 = env.reset()
    assert not info3["action_mask"][a]
    # a failure still costs the step: the episode truncates after max_steps of them
    flags = []
    for b in legal_passes(info3["action_mask"])[:3]:
        _, r, term, trunc, info4 = env.step(b)
        assert r == 0.0 and info4["failed"] == "mismatch"
        flags.append(trunc)
    assert flags == [False, False, True]
    assert env.pipeline() == ""
