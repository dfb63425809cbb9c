"""The seam between ptxopt and the learning layer (:mod:`ptxopt.plugins`, :mod:`rl.plugin`).

ptxopt never imports :mod:`rl` (``tests/project/test_import_contract.py``); the learning
layer registers ``ptxopt train``, the ``policy`` search strategy and its
checkpoint loader. Without it those fail with the one-line error they always had.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from ptxopt import plugins

ROOT = Path(__file__).resolve().parents[2]


def test_the_learning_layer_registers_what_ptxopt_used_to_import():
    reg = plugins.registry()
    assert reg.entries["command"] == {"train": "ptxopt_rl.cli:train_cmd"}
    assert reg.entries["strategy"] == {"policy": "ptxopt_rl.rollout:policy_search"}
    assert set(reg.entries["object"]) == {"load_policy", "CheckpointError"}
    assert plugins.commands() == ["train"]


def test_references_resolve_to_the_learning_layer():
    pytest.importorskip("torch")
    from ptxopt_rl.checkpoint import CheckpointError, load_policy
    from ptxopt_rl.rollout import policy_search

    assert plugins.strategy("policy") is policy_search
    assert plugins.obj("load_policy") is load_policy
    assert plugins.obj("CheckpointError") is CheckpointError


def test_an_unregistered_name_is_an_import_error():
    with pytest.raises(ImportError, match="no installed plugin provides the strategy 'nope'"):
        plugins.strategy("nope")


def _without(blocked: str, *args: str) -> subprocess.CompletedProcess:
    code = (f"import sys\nsys.modules[{blocked!r}] = None\n"
            "from ptxopt.cli import main\nmain(sys.argv[1:])\n")
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, cwd=ROOT)


@pytest.mark.parametrize("blocked", ["ptxopt_rl.plugin", "torch"])
def test_without_the_learning_layer_train_and_policy_fail_clearly(blocked, tmp_path):
    r = _without(blocked, "train", "--bc-only")
    assert r.returncode == 2, r.stderr
    assert r.stderr.startswith("ptxopt: error: training needs the learning layer (pip install 'ptxopt[rl]'): ")
    assert r.stderr.count("\n") == 1
    ckpt = tmp_path / "p.pt"
    ckpt.write_bytes(b"")
    r = _without(blocked, "search", "corpus:gemm_tile", "--policy", str(ckpt))
    assert r.returncode == 2, r.stderr
    assert r.stderr.startswith("ptxopt: error: --policy needs the learning layer (pip install 'ptxopt[rl]'): ")
    r = _without(blocked, "--help")
    assert r.returncode == 0 and "train" in r.stdout
