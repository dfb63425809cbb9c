"""The performance launch's block from the PTX: ``.reqntid`` fixes it (Triton writes ``32 * num_warps``
there), ``.maxntid`` gives it only as a labelled assumption; a kernel stating neither still needs
``--perf-block``.  The block only completes a launch the user partly gave (``--perf-grid`` ...): it never
makes one from the PTX alone, so the default objective of a kernel is unchanged."""

from __future__ import annotations

import json

from ptxopt.kernels.corpus import get
from ptxopt.evaluate import Candidate
from ptxopt.evaluate.candidate import objective_for
from tests.cli_helpers import run_cli


def _ptx(tmp_path, directive: str | None):
    text = get("triton_attention").ptx_text()
    assert ".reqntid 128" in text
    if directive is not None:
        text = text.replace(".reqntid 128", directive)
    p = tmp_path / "attention.ptx"
    p.write_text(text)
    return p


def _launch(path):
    r = run_cli("explain", path, "--perf-grid", "128,16,1", "--json")
    return r, (json.loads(r.stdout)["kernels"][0]["launch"] if r.exit_code == 0 else None)


def test_reqntid_gives_the_block(tmp_path):
    r, la = _launch(_ptx(tmp_path, None))
    assert r.exit_code == 0, r.stderr
    assert la["block"] == [128, 1, 1] and la["grid"] == [128, 16, 1]
    assert ".reqntid 128,1,1" in la["origin"] and "ASSUMED" not in la["origin"]


def test_maxntid_is_a_labelled_assumption(tmp_path):
    r, la = _launch(_ptx(tmp_path, ".maxntid 256, 1, 1"))
    assert r.exit_code == 0, r.stderr
    assert la["block"] == [256, 1, 1] and "ASSUMED" in la["origin"] and ".maxntid" in la["origin"]


def test_no_launch_bounds_still_needs_the_block(tmp_path):
    r, _ = _launch(_ptx(tmp_path, ""))
    assert r.exit_code == 2 and "--perf-block" in r.stderr


def test_the_ptx_alone_makes_no_performance_launch():
    text = get("triton_attention").ptx_text()
    assert objective_for(Candidate(text, name="attention.ptx")) == "latency"
