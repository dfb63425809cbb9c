"""The DRAM floor's source on the command line: ``explain`` on a kernel written outside the corpus with
a performance launch but no byte counts (the footprint from the kernel, ``exact``), ``--perf-bytes``
(the user's ``counts`` override it) and its bad forms (one line, exit 2)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli_helpers import run_cli

TRANSPOSE = Path(__file__).resolve().parents[2] / "benchmarks" / "outside_kernels" / "transpose.ptx"
MOVED = 2 * 8192 * 8192 * 4  # 256 MiB read + 256 MiB written


def _explain(*args):
    r = run_cli("explain", TRANSPOSE, *args, "--json")
    assert r.exit_code == 0, r.stderr
    (k,) = json.loads(r.stdout)["kernels"]
    return k


def test_footprint_from_the_kernel_sets_the_dram_floor():
    k = _explain()
    assert k["footprint"]["source"] == "exact" and k["footprint"]["floor_bytes"] == MOVED
    assert k["estimate"]["seconds"] >= MOVED / (k["device"]["dram_gbps"] * 1e9) * (1 - 1e-9)
    assert k["binding"] == "DRAM bandwidth"


def test_perf_bytes_override_the_footprint():
    k = _explain("--perf-bytes", "transpose_param_0=1024", "--perf-bytes", "transpose_param_1=1024")
    assert k["footprint"] == {"source": "counts", "floor_bytes": 2048, "buffers": [],
                              "notes": ["the user's per-buffer counts"], "launch": k["footprint"]["launch"]}


def test_bad_perf_bytes_is_one_line():
    for bad in ("transpose_param_0", "nosuch=4", "transpose_param_0=-1"):
        r = run_cli("explain", TRANSPOSE, "--perf-bytes", bad)
        assert r.exit_code == 2, (bad, r.stdout)
        assert "--perf-bytes" in r.stderr and "Traceback" not in r.stderr and r.stderr.count("\n") == 1
