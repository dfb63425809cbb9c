"""``ptxopt explain``: the JSON keys a caller relies on (exactly these), launches
(given, assumed), objectives, before/after, and one-line errors (exit 2)."""

from __future__ import annotations

import json

import pytest

from tests.cli_helpers import run_cli

ENTRY = {"name", "launch", "objective", "registers", "spills", "occupancy", "binding", "bounds", "estimate",
         "dram_bytes", "device"}
OCCUPANCY = {"warps_per_sm", "blocks_per_sm", "occupancy", "limited_by"}
ESTIMATE = {"cycles", "seconds", "kind", "expected_error"}
DEVICE = {"name", "sm_count", "clock_mhz", "dram_gbps", "l2_bytes"}
BOUNDS = {"latency", "issue", "tensor", "arithmetic", "LSU issue", "L1 bandwidth", "L2 bandwidth", "DRAM bandwidth",
          "bytes in flight"}


def _explain(*args):
    r = run_cli("explain", *args, "--json")
    assert r.exit_code == 0, r.stderr
    return json.loads(r.stdout)


def _check_keys(d: dict) -> None:
    assert ENTRY - {"name"} <= set(d)
    assert set(d["occupancy"]) == OCCUPANCY
    assert set(d["estimate"]) == ESTIMATE and d["estimate"]["kind"] == "estimate"
    assert set(d["device"]) == DEVICE
    # latency: one warp, the one bound; throughput: every bound of the whole-launch model
    assert set(d["bounds"]) == (BOUNDS if d["objective"] == "throughput" else {"latency"})
    assert d["binding"] in d["bounds"] and d["bounds"][d["binding"]] == max(d["bounds"].values())
    assert set(d["spills"]) == {"store_bytes", "load_bytes"}


def test_json_keys_and_a_given_performance_launch():
    doc = _explain("corpus:cuda_vector_add", "--perf-grid", "4096", "--perf-block", "256", "--perf-scalar",
                   "vector_add_param_3=1048576")
    (k,) = doc["kernels"]
    assert set(doc) == {"kernels"} and k["name"] == "vector_add"
    _check_keys(k)
    assert k["objective"] == "throughput" and k["estimate"]["expected_error"] == "uncalibrated"
    la = k["launch"]
    assert (la["grid"], la["block"], la["assumed"], la["blocks"]) == ([4096, 1, 1], [256, 1, 1], False, 4096)
    # the options override single fields of the corpus manifest's performance launch
    assert la["scalars"] == {"vector_add_param_3": 1048576}
    assert la["origin"] == "corpus:cuda_vector_add performance + options"
    assert k["device"] == {"name": "L4", "sm_count": 58, "clock_mhz": 2040, "dram_gbps": 300, "l2_bytes": 48 << 20}
    assert k["estimate"]["seconds"] == pytest.approx(k["estimate"]["cycles"] / 2040e6)


def test_corpus_performance_launch_a_given_block_with_the_grid_assumed_and_latency_objective(tmp_path):
    from ptxopt.kernels.corpus import get

    # a corpus kernel: its manifest performance launch (what a user runs), not the check launch
    (k,) = _explain("corpus:cuda_saxpy")["kernels"]
    la = k["launch"]
    assert (la["grid"], la["block"], la["assumed"]) == ([4096, 1, 1], [256, 1, 1], False)
    assert la["origin"] == "corpus:cuda_saxpy performance" and k["objective"] == "throughput"
    assert la["scalars"] == {"saxpy_param_0": 1 << 24, "saxpy_param_1": 2.5}
    # its buffers at that size (2 x 64 MiB, over L2) bound it by DRAM: no faster than bytes / bandwidth;
    # x is read, y read and written back (a read-modify-write buffer counts twice): 3 x 64 MiB move
    assert k["dram_bytes"] == 3 * 4 << 24 and k["binding"] == "DRAM bandwidth"
    assert k["estimate"]["seconds"] >= k["dram_bytes"] / (k["device"]["dram_gbps"] * 1e9)
    # a block alone: the grid is assumed (full waves at the original's occupancy)
    p = tmp_path / "saxpy.ptx"
    p.write_text(get("cuda_saxpy").ptx_text())
    (k,) = _explain(p, "--perf-block", "128")["kernels"]
    assert k["launch"]["assumed"] and k["launch"]["grid"] is None and k["launch"]["block"] == [128, 1, 1]
    assert k["launch"]["blocks"] == 4 * 58 * k["occupancy"]["blocks_per_sm"] and k["launch"]["origin"] == "options"
    # a contract file's "performance" entry next to the PTX is found like the check contract
    (tmp_path / "saxpy.contract.json").write_text(json.dumps({"performance": {"grid": [100], "block": [64]}}))
    (k,) = _explain(p)["kernels"]
    assert (k["launch"]["grid"], k["launch"]["block"], k["launch"]["origin"]) == (
        [100, 1, 1], [64, 1, 1], "saxpy.contract.json")
    (lat,) = _explain("corpus:cuda_saxpy", "--objective", "latency")["kernels"]
    _check_keys(lat)
    assert lat["binding"] == "latency" and lat["estimate"]["expected_error"] == 0.25
    # the gemm_tile family keeps the single-warp objective by default
    (g,) = _explain("corpus:gemm_tile_2x2x2")["kernels"]
    assert g["objective"] == "latency"


def test_a_register_budget_that_cuts_occupancy_is_slower_for_the_launch_though_one_warp_is_faster(tmp_path):
    """Why the launch matters, on a real corpus kernel (ESTIMATES): maxnreg_255 lets ptxas give Triton's attention
    48 -> 53 registers; one warp gets (slightly) faster, but 10 -> 9 blocks fit per SM, and the same
    work (the original's assumed block count) takes longer. (Its manifest performance launch, one head of
    seq 4096, is 256 blocks: under one wave, where the lost block per SM costs nothing; so the grid is
    left to be assumed here: a PTX file given only its block.)"""
    from ptxopt.kernels.corpus import get

    p = tmp_path / "attention.ptx"
    p.write_text(get("triton_attention").ptx_text())
    # the check launch as in the manifest (seq_len 64), for the interpreter's loop trips
    (k,) = _explain(p, "--grid", "4", "--block", "128", "--shared-bytes", "1024", "--scalar", "attention_param_4=64",
                    "--perf-block", "128", "-p", "maxnreg_255", "--l2", "warm")["kernels"]  # one warp as calibrated
    assert k["pipeline"] == "maxnreg_255" and k["objective"] == "throughput"
    b, a = k["before"], k["after"]
    for side in (b, a):
        _check_keys(side)
    assert a["launch"]["blocks"] == b["launch"]["blocks"] and a["launch"]["assumed"]  # fixed by the original
    assert a["registers"] > b["registers"]
    assert a["occupancy"]["limited_by"] == "registers"
    assert a["occupancy"]["blocks_per_sm"] < b["occupancy"]["blocks_per_sm"]
    assert a["single_warp_cycles"] < b["single_warp_cycles"]  # latency objective: better
    assert a["estimate"]["cycles"] > b["estimate"]["cycles"]  # throughput objective: worse
    assert k["change"]["kind"] == "estimate" and k["change"]["relative"] > 0


def test_text_output_and_plot(tmp_path):
    png = tmp_path / "b.png"
    r = run_cli("explain", "corpus:cuda_saxpy", "--perf-grid", "1000", "--perf-block", "128", "--plot", png)
    assert r.exit_code == 0, r.stderr
    assert "occupancy" in r.stdout and "bounds" in r.stdout and "ESTIMATE" in r.stdout and "*" in r.stdout
    assert png.stat().st_size > 0


def test_plot_draws_before_and_after_on_one_scale(tmp_path, monkeypatch):
    import matplotlib.pyplot as plt

    from ptxopt.cli.explain import _plot

    figs = []
    monkeypatch.setattr(plt, "close", figs.append)
    before = {"bounds": {"issue": 100.0, "DRAM": 900.0}, "binding": "DRAM", "objective": "throughput"}
    after = {"bounds": {"issue": 100.0, "DRAM": 300.0}, "binding": "DRAM", "objective": "throughput"}
    _plot([{"name": "k", "pipeline": "vec_ld", "before": before, "after": after}], str(tmp_path / "p.png"))
    [fig] = figs
    a, b = fig.axes
    assert a.get_xlim() == b.get_xlim() and a.get_xlim()[1] >= 900


@pytest.mark.parametrize("args, message", [
    (("corpus:cuda_saxpy", "--device", "V100"), "unknown device"),
    (("corpus:cuda_saxpy", "--device", "H100-SXM", "--arch", "sm_89"), "sm_90"),
    (("corpus:cuda_saxpy", "--kernel", "nope"), "no .entry named nope"),
    (("corpus:cuda_saxpy", "--perf-grid", "0"), "--perf-grid"),
    (("corpus:cuda_saxpy", "--perf-scalar", "n"), "--perf-scalar"),
    (("corpus:cuda_saxpy", "--perf-scalar", "n=4"), "saxpy has no parameter n"),
    (("corpus:triton_vector_add", "--perf-block", "256"), "is not the entry's .reqntid (128, 1, 1)"),
    (("corpus:cuda_saxpy", "--perf-block", "64,32"), "at most 1024"),
    (("corpus:cuda_saxpy", "-p", "not_a_pass"), "not_a_pass"),
])
def test_bad_input_is_one_line_exit_2(args, message):
    r = run_cli("explain", *args)
    assert r.exit_code == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], r.stderr


def test_throughput_without_a_block_is_refused(tmp_path):
    from ptxopt.kernels.corpus import get

    p = tmp_path / "k.ptx"
    p.write_text(get("cuda_saxpy").ptx_text())
    (k,) = _explain(str(p))["kernels"]  # no contract, no block: latency
    assert k["objective"] == "latency" and k["launch"] is None and k["occupancy"] is None
    for extra in (("--objective", "throughput"), ("--perf-grid", "8")):
        r = run_cli("explain", p, *extra)
        assert r.exit_code == 2 and "--perf-block" in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_loop_trips_come_from_the_interpreter_under_a_contract(tmp_path):
    """A PTX file with contract options: the check launch's loop counts (default buffers) reach the model.
    Before the fix, measure.loops.loop_profile indexed the (args, defaulted) pair as the argument list and
    every contract geometry fell back to the static loop count."""
    from ptxopt.kernels.corpus import get

    p = tmp_path / "saxpy.ptx"
    p.write_text(get("cuda_saxpy").ptx_text())
    (k,) = _explain(p, "--grid", "2", "--block", "128", "--scalar", "saxpy_param_0=256",
                    "--objective", "throughput")["kernels"]  # no performance launch: latency by default
    assert k["loop_trips"] == "interpreter (check launch)"
    assert k["launch"]["block"] == [128, 1, 1] and k["launch"]["assumed"]
