"""GRPO rollouts through an executor (rl.remote, issue 33): one task per kernel's group, the
driver writes the rows the task returns; seeded per (run, epoch, kernel), so reproducible.
Slow tier: two cold GRPO epochs, ~45 s here."""

from __future__ import annotations

import sqlite3

import pytest

torch = pytest.importorskip("torch")

from ptxopt.executor import LocalExecutor  # noqa: E402
from ptxopt.search import EvalOptions  # noqa: E402
from ptxopt_rl.env import PipelineEnv  # noqa: E402
from ptxopt_rl.grpo import GRPOConfig, GRPOTrainer  # noqa: E402
from ptxopt_rl.policy import Policy, PolicyConfig  # noqa: E402
from ptxopt_rl.remote import group_seed  # noqa: E402

from ptxopt.search.state import observation_names  # noqa: E402

K2 = "gemm_tile_2x2x2"


def _epoch(tmp_path, tag):
    torch.manual_seed(3)
    pol = Policy(PolicyConfig(obs_dim=len(observation_names())))
    cache = tmp_path / f"{tag}.sqlite"
    options = EvalOptions(cache=str(cache))
    cfg = GRPOConfig(epochs=1, group_size=2, max_steps=2, checkpoint_every=0, eval_every=0, seed=5)
    trainer = GRPOTrainer(pol, PipelineEnv([K2], options=options, max_steps=2), [K2], cfg, tmp_path / tag,
                          executor=LocalExecutor(0))
    row = trainer.epoch(1)
    n = sqlite3.connect(cache).execute("SELECT COUNT(*) FROM results").fetchone()[0]
    return row, n


@pytest.mark.slow
def test_an_epoch_through_an_executor_is_seeded_and_the_driver_writes_the_rows(tmp_path):
    a, rows_a = _epoch(tmp_path, "a")
    b, rows_b = _epoch(tmp_path, "b")
    assert a["evaluations"] > 0 and rows_a == rows_b > 0  # what the task evaluated is in the driver's cache
    assert (a["mean_return"], a["evaluations"]) == (b["mean_return"], b["evaluations"])
    assert group_seed(5, 1, 0) != group_seed(5, 2, 0) != group_seed(5, 1, 1)
