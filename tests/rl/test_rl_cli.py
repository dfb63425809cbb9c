"""``ptxopt train`` and ``ptxopt search --policy``.

Every command passes ``--cache`` in a temporary folder shared by the rl test
modules of this session (never ~/.cache) and ``--out`` in a temporary
folder. The trajectories are recorded once per module with ``ptxopt search
gemm_tile_2x2x2,gemm_tile_2x2x4 --record``, and one BC checkpoint is trained
from them.
"""

from __future__ import annotations

import csv
import json

import pytest
from click.testing import CliRunner

torch = pytest.importorskip("torch")
pytest.importorskip("gymnasium")

from ptxopt.cli import cli  # noqa: E402
from ptxopt.search import read_jsonl  # noqa: E402
from ptxopt_rl.checkpoint import load_policy, save_policy  # noqa: E402
from cli_helpers import with_default_sigint  # noqa: E402

K2, K4 = "gemm_tile_2x2x2", "gemm_tile_2x2x4"


def run(*args):
    return CliRunner().invoke(cli, [*map(str, args)])


def one_line_error(r, *needles):
    """Exit 2 with a single 'ptxopt: error:' line on stderr and no traceback."""
    assert r.exit_code == 2, r.output
    assert isinstance(r.exception, SystemExit)
    assert "Traceback" not in r.output
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ptxopt: error:"), r.stderr
    for n in needles:
        assert n in lines[0]
    return lines[0]


@pytest.fixture(scope="module")
def cache(rl_cache):
    return rl_cache


@pytest.fixture(scope="module")
def trajectories(tmp_path_factory, cache):
    path = tmp_path_factory.mktemp("traj") / "greedy.jsonl"
    r = run("search", f"{K2},{K4}", "--cache", cache, "--record", path, "-q")
    assert r.exit_code == 0, r.output
    return path


@pytest.fixture(scope="module")
def bc_run(tmp_path_factory, trajectories, cache):
    out = tmp_path_factory.mktemp("bc")
    r = run("train", "--bc-only", "--trajectories", trajectories, "--out", out, "--bc-epochs", 40, "--loko",
            "--cache", cache)
    return r, out


@pytest.fixture(scope="module")
def bc_ckpt(bc_run):
    r, out = bc_run
    assert r.exit_code == 0, r.output
    return out / "bc.pt"


@pytest.fixture
def garbage(tmp_path):
    p = tmp_path / "garbage.pt"
    p.write_bytes(b"this is not a torch checkpoint\n" * 20)
    return p


def test_train_help():
    r = run("train", "--help")
    assert r.exit_code == 0
    for opt in ("--bc-only", "--quick", "--eval", "--checkpoint", "--trajectories", "--out", "--loko", "--epochs",
                "--group-size", "--kl-beta", "--samples", "--cache"):
        assert opt in r.output
    assert "train" in run("--help").output


def test_bc_only_writes_checkpoint_and_summary(bc_run, trajectories):
    r, out = bc_run
    assert r.exit_code == 0, r.output
    assert (out / "bc.pt").exists() and (out / "train.json").exists()
    assert not (out / "policy.pt").exists() and not (out / "grpo_log.csv").exists()  # no GRPO with --bc-only
    steps = [s for s in read_jsonl(trajectories) if s.strategy == "greedy"]
    doc = json.loads((out / "train.json").read_text())
    assert doc["mode"] == "bc-only" and doc["trajectories"] == [str(trajectories)]
    bc = doc["bc"]
    assert bc["steps"] == len(steps) and bc["kernels"] == 2
    assert 0.0 <= bc["train_accuracy"] <= 1.0
    lk = bc["leave_one_kernel_out"]
    assert lk["steps"] == len(steps) and lk["kernels"] == 2
    for k in ("mlp_accuracy", "random_forest_accuracy", "majority_accuracy"):
        assert 0.0 <= lk[k] <= 1.0
    assert "BC checkpoint:" in r.stdout and "leave-one-kernel-out" in r.stdout
    policy, meta = load_policy(out / "bc.pt")
    assert meta["stage"] == "bc" and meta["trajectories"] == [str(trajectories)]
    assert meta["bc"]["steps"] == len(steps)


def test_bc_only_with_a_family_filter(tmp_path, trajectories, cache):
    r = run("train", "--bc-only", "--trajectories", trajectories, "--out", tmp_path, "--bc-epochs", 2,
            "--families", "no_such_family", "--cache", cache)
    one_line_error(r, "no trajectory steps")
    assert not (tmp_path / "bc.pt").exists()
    r = run("train", "--bc-only", "--trajectories", trajectories, "--out", tmp_path, "--bc-epochs", 2,
            "--families", "gemm_tile", "--cache", cache)
    assert r.exit_code == 0, r.output
    assert json.loads((tmp_path / "train.json").read_text())["families"] == ["gemm_tile"]


def test_missing_trajectory_file(tmp_path, cache):
    r = run("train", "--bc-only", "--trajectories", tmp_path / "nope.jsonl", "--out", tmp_path / "o", "--cache", cache)
    assert r.exit_code == 2 and "nope.jsonl" in r.output and "Traceback" not in r.output
    assert not (tmp_path / "o" / "bc.pt").exists()


def test_bad_trajectory_file(tmp_path, cache):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"schema": 1}\n')
    r = run("train", "--bc-only", "--trajectories", bad, "--out", tmp_path / "o", "--cache", cache)
    one_line_error(r, "bad.jsonl:1")


def test_eval_needs_a_checkpoint(tmp_path, cache):
    r = run("train", "--eval", "--out", tmp_path, "--cache", cache)
    one_line_error(r, "--checkpoint")


def test_modes_are_exclusive(tmp_path, cache):
    r = run("train", "--bc-only", "--eval", "--out", tmp_path, "--cache", cache)
    one_line_error(r, "choose one")


@pytest.mark.parametrize("mode", [["--eval"], []], ids=["eval", "grpo-from-checkpoint"])
def test_garbage_checkpoint_is_a_one_line_error(tmp_path, cache, garbage, trajectories, mode):
    r = run("train", *mode, "--checkpoint", garbage, "--trajectories", trajectories, "--kernels", K2,
            "--out", tmp_path / "o", "--cache", cache)
    one_line_error(r, "garbage.pt")
    assert not (tmp_path / "o" / "policy.pt").exists()


def test_checkpoint_for_other_actions_is_a_one_line_error(tmp_path, cache, bc_ckpt):
    doc = torch.load(bc_ckpt, weights_only=True)
    doc["action_names"] = list(reversed(doc["action_names"]))
    other = tmp_path / "other.pt"
    torch.save(doc, other)
    one_line_error(run("train", "--eval", "--checkpoint", other, "--kernels", K2, "--out", tmp_path, "--cache", cache),
                   "retrain")
    one_line_error(run("search", K2, "--policy", other, "--cache", cache), "retrain")


def test_checkpoint_missing_a_key_is_a_one_line_error(tmp_path, cache, bc_ckpt):
    doc = torch.load(bc_ckpt, weights_only=True)
    del doc["action_names"]
    broken = tmp_path / "broken.pt"
    torch.save(doc, broken)
    one_line_error(run("search", K2, "--policy", broken, "--cache", cache), "broken.pt")


def test_unknown_kernels_for_eval(tmp_path, cache, bc_ckpt):
    one_line_error(run("train", "--eval", "--checkpoint", bc_ckpt, "--kernels", "no_such_kernel", "--out", tmp_path,
                       "--cache", cache), "no_such_kernel")


def test_search_with_the_bc_policy(bc_ckpt, cache, tmp_path):
    rec = tmp_path / "policy.jsonl"
    r = run("search", K2, "--policy", bc_ckpt, "--cache", cache, "--json", "-", "--record", rec)
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert d["strategy"] == "policy" and d["policy"] == str(bc_ckpt) and d["samples"] == 0
    [k] = d["kernels"]
    assert k["kernel"] == K2 and k["strategy"] == "policy" and k["error"] is None
    assert k["best_cycles"] <= k["baseline_cycles"] and k["evaluations"] >= 1
    steps = list(read_jsonl(rec))
    assert steps and all(s.strategy == "policy" and s.kernel == K2 for s in steps)
    assert {s.episode for s in steps} == {0}


def test_search_with_best_of_k(bc_ckpt, cache):
    r = run("search", f"{K2},{K4}", "--policy", bc_ckpt, "--samples", 2, "--max-steps", 3, "--cache", cache,
            "--json", "-")
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert d["strategy"] == "policy" and d["samples"] == 2
    assert [k["kernel"] for k in d["kernels"]] == [K2, K4]
    assert all(k["error"] is None and k["best_cycles"] <= k["baseline_cycles"] for k in d["kernels"])


def test_search_with_a_garbage_policy(garbage, cache):
    one_line_error(run("search", K2, "--policy", garbage, "--cache", cache), "garbage.pt")


def test_search_with_a_missing_policy(tmp_path, cache):
    r = run("search", K2, "--policy", tmp_path / "missing.pt", "--cache", cache)
    assert r.exit_code == 2 and "missing.pt" in r.output and "Traceback" not in r.output


def test_eval_protocol(bc_ckpt, cache, tmp_path):
    out_json = tmp_path / "eval.json"
    r = run("train", "--eval", "--checkpoint", bc_ckpt, "--kernels", K2, "--samples", 2, "--out", tmp_path / "o",
            "--cache", cache, "--json", out_json)
    assert r.exit_code == 0, r.output
    assert "greedy@policy" in r.stdout and "ESTIMATE" in r.stdout
    d = json.loads(out_json.read_text())
    assert d["samples"] == 2
    [row] = d["kernels"]
    assert row["kernel"] == K2 and row["family"] == "gemm_tile"
    names = ["greedy", "policy", "policy@2", "random@policy", "greedy@policy"]
    assert all(row[n]["error"] is None for n in names)
    budget = max(1, row["policy@2"]["evaluations"])
    # equal budgets: the baselines spend no more than the policy's best-of-K did
    assert row["random@policy"]["evaluations"] <= budget
    assert row["greedy@policy"]["evaluations"] <= budget
    assert row["greedy@policy"]["evaluations"] <= row["greedy"]["evaluations"]
    assert set(d["summary"]) >= set(names)
    assert d["summary"]["greedy"]["mean_improvement_pct"] == pytest.approx(row["greedy"]["improvement_pct"])


def test_grpo_from_a_checkpoint(bc_ckpt, cache, tmp_path, trajectories):
    out = tmp_path / "grpo"
    r = run("train", "--checkpoint", bc_ckpt, "--trajectories", trajectories, "--kernels", K2, "--epochs", 1,
            "--group-size", 2, "--out", out, "--cache", cache)
    assert r.exit_code == 0, r.output
    assert "ESTIMATE" in r.stdout
    assert not (out / "bc.pt").exists()  # started from the given checkpoint, no BC run
    _, meta = load_policy(out / "policy.pt")
    assert meta["stage"] == "grpo" and meta["epoch"] == 1 and meta["kernels"] == [K2]
    with open(out / "grpo_log.csv") as f:
        rows = list(csv.DictReader(f))
    assert [r_["epoch"] for r_ in rows] == ["1"]
    assert (out / "grpo_curves.png").read_bytes()[:4] == b"\x89PNG"
    doc = json.loads((out / "train.json").read_text())
    assert doc["mode"] == "full" and doc["grpo_kernels"] == [K2] and len(doc["grpo"]) == 1
    # the trained policy drives a search
    r = run("search", K2, "--policy", out / "policy.pt", "--cache", cache, "--json", "-")
    assert r.exit_code == 0 and json.loads(r.stdout)["kernels"][0]["error"] is None


def test_saved_random_policy_drives_a_search(tmp_path, cache):
    from ptxopt.search import observation_names
    from ptxopt_rl.policy import Policy, PolicyConfig

    ckpt = save_policy(tmp_path / "random.pt", Policy(PolicyConfig(obs_dim=len(observation_names()))))
    r = run("search", K4, "--policy", ckpt, "--cache", cache, "--json", "-")
    assert r.exit_code == 0, r.output
    [k] = json.loads(r.stdout)["kernels"]
    assert k["strategy"] == "policy" and k["best_cycles"] <= k["baseline_cycles"]


def test_interrupted_grpo_keeps_the_finished_epochs(bc_ckpt, cache, tmp_path, trajectories, monkeypatch):
    """Ctrl-C in epoch 2, after one of its updates: epoch 1's policy, its
    curves and a train.json marked interrupted are written; exit 130."""
    import copy

    from ptxopt_rl import grpo

    after_epoch, real_epoch, real_update = {}, grpo.GRPOTrainer.epoch, grpo.grpo_update

    def epoch(self, n):
        row = real_epoch(self, n)
        after_epoch[n] = copy.deepcopy(self.policy.state_dict())
        return row

    def update(policy, *args):
        stats = real_update(policy, *args)
        if after_epoch:  # epoch 2: its update has changed the weights, then Ctrl-C
            raise KeyboardInterrupt
        return stats

    monkeypatch.setattr(grpo.GRPOTrainer, "epoch", epoch)
    monkeypatch.setattr(grpo, "grpo_update", update)
    out = tmp_path / "grpo"
    r = run("train", "--checkpoint", bc_ckpt, "--trajectories", trajectories, "--kernels", K2, "--epochs", 3,
            "--group-size", 2, "--out", out, "--cache", cache)
    assert r.exit_code == 130, r.output
    assert r.stderr.strip().splitlines()[-1].startswith("ptxopt: interrupted after 1/3 GRPO epochs")
    policy, meta = load_policy(out / "policy.pt")
    assert meta["epoch"] == 1 and meta["interrupted"] is True
    assert all(torch.equal(v, after_epoch[1][k]) for k, v in policy.state_dict().items())  # epoch 2 rolled back
    doc = json.loads((out / "train.json").read_text())
    assert (doc["interrupted"], doc["epochs_done"], doc["epochs"], len(doc["grpo"])) == (True, 1, 3, 1)
    assert (out / "grpo_curves.png").read_bytes()[:4] == b"\x89PNG"
    with open(out / "grpo_log.csv") as f:
        assert [row["epoch"] for row in csv.DictReader(f)] == ["1"]


@pytest.mark.slow
@pytest.mark.parametrize("signame, code", [("SIGINT", 130), ("SIGTERM", 143)])
def test_ctrl_c_during_grpo_exits_130_with_the_finished_epochs(bc_ckpt, cache, tmp_path, trajectories, signame,
                                                               code):
    """The same with a real SIGINT to a ``ptxopt train`` process group; SIGTERM
    (``timeout``, ``docker stop``: the parent alone) takes the same path, exit 143."""
    import os
    import signal
    import subprocess
    import sys
    from pathlib import Path

    out = tmp_path / "grpo"
    proc = subprocess.Popen(with_default_sigint([sys.executable, "-m", "ptxopt.cli", "train", "--checkpoint", bc_ckpt,
                                                 "--trajectories", trajectories, "--kernels", K2, "--epochs", "200",
                                                 "--group-size", "2", "--out", out, "--cache", cache]),
                            cwd=Path(__file__).resolve().parents[2], start_new_session=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        for line in proc.stdout:
            if line.startswith("epoch 1/"):
                (os.killpg if signame == "SIGINT" else os.kill)(proc.pid, getattr(signal, signame))
                break
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == code, err
    assert "Traceback" not in err
    doc = json.loads((out / "train.json").read_text())
    assert doc["interrupted"] is True and doc["epochs_done"] >= 1 and len(doc["grpo"]) == doc["epochs_done"]
    assert load_policy(out / "policy.pt")[1]["epoch"] == doc["epochs_done"]
    assert (out / "grpo_curves.png").exists()


def test_an_unusable_cache_stops_training_before_any_work(tmp_path, trajectories):
    """GRPO evaluates through the cache (--bc-only never opens it, so it is not checked there)."""
    bad = tmp_path / "eval.sqlite"
    bad.write_bytes(b"SQLite format 3\x00" + b"\xff" * 4000)  # a header, then garbage
    line = one_line_error(run("train", "--quick", "--trajectories", trajectories, "--out", tmp_path / "o",
                              "--cache", bad), "cannot be used")
    assert "--fresh-cache" not in line and not (tmp_path / "o" / "bc.pt").exists()


def test_two_trainings_cannot_share_an_out_folder(tmp_path, trajectories):
    """A live run holds --out's grpo_log.csv: a second one is refused before any work (no mixed log)."""
    from ptxopt.support.outputs import StreamLock

    out = tmp_path / "out"
    out.mkdir()
    with StreamLock(out / "grpo_log.csv"):
        r = run("train", "--bc-only", "--trajectories", trajectories, "--out", out)
    assert r.exit_code == 2, r.output
    assert "being written by another running ptxopt" in r.stderr and not (out / "bc.pt").exists()
