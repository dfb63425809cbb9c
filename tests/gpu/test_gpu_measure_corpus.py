"""``benchmarks/reports/gpu_measure_corpus.py``: the no-GPU exit, the numpy
Spearman, the bookkeeping of the corpus loop (with the real harness child,
which answers ``unavailable`` here), and ``--compare-sim`` on a
measurements file (no GPU needed)."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from ptxopt.kernels.corpus import get
from ptxopt.gpu import GpuWorker, gpu_available
from ptxopt.ptx.parser import parse

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "reports" / "gpu_measure_corpus.py"
sys.path.insert(0, str(SCRIPT.parent))
from gpu_measure_corpus import (  # noqa: E402
    KIND,
    compare_sim,
    format_comparison,
    measure_corpus,
    rankdata,
    slug,
    spearman,
    variant_text,
)

GPU, GPU_REASON = gpu_available()


def _run(*args, env=None):
    import os

    e = dict(os.environ)
    e.update(env or {})
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=300,
                          env=e)


@pytest.mark.skipif(GPU, reason="a GPU is present: measure_corpus would measure")
def test_exits_2_without_a_gpu(tmp_path):
    out = tmp_path / "m.json"
    r = _run("--out", str(out))
    assert r.returncode == 2
    assert r.stderr.strip() == f"no GPU: {GPU_REASON}"
    assert not out.exists()


def test_exits_2_when_disabled(tmp_path):
    # works on any machine: PTXOPT_GPU=0 turns the backend off
    r = _run("--out", str(tmp_path / "m.json"), env={"PTXOPT_GPU": "0"})
    assert r.returncode == 2 and r.stderr.strip() == "no GPU: disabled by PTXOPT_GPU=0"


def test_bad_arguments():
    r = _run("--passes", "vec_ld,nope", env={"PTXOPT_GPU": "0"})
    assert r.returncode == 2 and "unknown pass(es) nope" in r.stderr
    r = _run("--kernels", "no_such_family", env={"PTXOPT_GPU": "0"})
    assert r.returncode == 2 and "unknown corpus selector" in r.stderr


# ---------------------------------------------------------------------------
# Spearman without scipy
# ---------------------------------------------------------------------------


def test_rankdata_ties():
    assert rankdata([10, 20, 20, 30]).tolist() == [1.0, 2.5, 2.5, 4.0]
    assert rankdata([3, 1, 2]).tolist() == [3.0, 1.0, 2.0]


def test_spearman_known_values():
    # scipy.stats.spearmanr([1, 2, 3, 4, 5], [5, 6, 7, 8, 7]) == 0.8207826816681233
    assert math.isclose(spearman([1, 2, 3, 4, 5], [5, 6, 7, 8, 7]), 0.8207826816681233, rel_tol=1e-12)
    assert spearman([1, 2, 3], [30, 20, 10]) == pytest.approx(-1.0)
    assert spearman([1, 2, 3, 4], [1, 4, 9, 16]) == pytest.approx(1.0)  # monotone, not linear
    assert math.isnan(spearman([1, 2, 3], [5, 5, 5]))
    assert math.isnan(spearman([1], [2]))


def test_slug():
    assert slug("NVIDIA H100 80GB HBM3") == "nvidia-h100-80gb-hbm3"
    assert slug("  ") == "gpu"


# ---------------------------------------------------------------------------
# variants and the corpus loop
# ---------------------------------------------------------------------------


def test_variant_text_statuses():
    spec = get("gemm_tile_2x2x2")
    text = spec.ptx_text()
    m = parse(text)
    assert variant_text(text, m, "baseline") == (text, "ok", "")
    v, status, _ = variant_text(text, m, "vec_ld")
    assert status == "ok" and v != text and "ld.global.v4.f32" in v
    assert variant_text(text, m, "split_ld")[1] == "unchanged"  # nothing vectorised to split


def test_corpus_loop_bookkeeping(tmp_path):
    """The real worker: on this machine every measurement is 'unavailable', which
    is enough to check records, copies for unchanged passes, the file written
    after each kernel, and --resume re-measuring retryable records."""
    if GPU:
        pytest.skip("a GPU is present: see tests/gpu/test_gpu_device.py")
    kernels = [get("gemm_tile_2x2x2"), get("gemm_tile_2x4x2")]
    pipelines = ["baseline", "vec_ld", "split_ld", "maxnreg_32"]
    data = {"schema": 1, "kind": KIND, "kernels": {}}
    out = tmp_path / "m.json"
    log = []

    class Log:
        def write(self, s):
            log.append(s)

        def flush(self):
            pass

    with GpuWorker() as w:
        measure_corpus(data, kernels, pipelines, warmup=1, repeats=2, seed=0, timeout=60, out=out, worker=w,
                       log=Log())
        assert w.starts == 1  # one child for all requests
    saved = json.loads(out.read_text())
    assert set(saved["kernels"]) == {"gemm_tile_2x2x2", "gemm_tile_2x4x2"}
    k = saved["kernels"]["gemm_tile_2x2x2"]
    assert k["baseline"]["status"] == "unavailable" and k["baseline"]["message"] == GPU_REASON
    assert k["vec_ld"]["status"] == "unavailable" and k["vec_ld"]["changed"] is True
    assert k["split_ld"]["changed"] is False and k["split_ld"]["same_as"] == "baseline"
    assert set(k["baseline"]) >= {"cycles_median", "cycles_iqr", "cycles_min", "cycles_max", "wall_us_median",
                                  "registers", "spill_bytes", "status"}
    assert len([s for s in log if "gemm_tile_" in s]) == 2
    # resume: 'unavailable' is retryable, so every measured record is asked for again
    with GpuWorker() as w:
        measure_corpus(saved, kernels[:1], pipelines, warmup=1, repeats=2, seed=0, timeout=60, out=out,
                       worker=w, resume=True, log=Log())
    assert json.loads(out.read_text())["kernels"]["gemm_tile_2x2x2"]["baseline"]["status"] == "unavailable"


# ---------------------------------------------------------------------------
# --compare-sim on a measurements file (no GPU needed)
# ---------------------------------------------------------------------------


def _synthetic(tmp_path, kernels, pipelines, cycles_of):
    """A measurements file whose 'measured' cycles are ``cycles_of(kernel, pipeline, text)``: the
    comparison plumbing is under test here, not the model."""
    data = {"schema": 1, "kind": KIND, "gpu": {"device": "synthetic", "arch": "sm_89"}, "kernels": {}}
    for kid in kernels:
        spec = get(kid)
        text = spec.ptx_text()
        m = parse(text)
        entry = data["kernels"].setdefault(kid, {})
        for pl in pipelines:
            v, status, msg = variant_text(text, m, pl)
            if v is None:
                entry[pl] = {"status": "illegal" if status == "illegal" else "ok", "changed": False,
                             "cycles_median": entry["baseline"]["cycles_median"], "message": msg}
                continue
            entry[pl] = {"status": "ok", "changed": True, "cycles_median": cycles_of(kid, pl, v)}
    path = tmp_path / "synthetic.json"
    path.write_text(json.dumps(data))
    return data, path


def test_compare_sim_perfect_agreement(tmp_path):
    from ptxopt.sim import estimate

    kernels = ["gemm_tile_2x2x2", "gemm_tile_2x4x2"]
    pipelines = ["baseline", "vec_ld", "maxnreg_32", "split_ld"]
    data, path = _synthetic(tmp_path, kernels, pipelines, lambda k, p, text: estimate(text, "sm_89").cycles)
    c = compare_sim(data)
    assert c["arch"] == "sm_89"
    # split_ld changes nothing here: left out, so duplicates cannot inflate the correlation
    assert c["pairs"] == 6
    assert c["spearman_overall"] == pytest.approx(1.0)
    assert c["direction_agreement"] == pytest.approx(1.0)
    text = format_comparison(c)
    assert "Spearman over all" in text and "1.000" in text



def test_compare_sim_command_line(tmp_path):
    from ptxopt.sim import estimate

    _, path = _synthetic(tmp_path, ["gemm_tile_2x2x2"], ["baseline", "vec_ld"],
                         lambda k, p, text: estimate(text, "sm_89").cycles)
    out = tmp_path / "with_comparison.json"
    r = _run("--input", str(path), "--compare-sim", "--out", str(out))
    assert r.returncode == 0, r.stderr
    assert "Spearman over all (kernel, pipeline) pairs: 1.000" in r.stdout
    assert json.loads(out.read_text())["sim_comparison"]["pairs"] == 2


def test_compare_sim_reversed(tmp_path):
    from ptxopt.sim import estimate

    data, _ = _synthetic(tmp_path, ["gemm_tile_4x4x4"], ["baseline", "vec_ld", "maxnreg_32"],
                         lambda k, p, text: -estimate(text, "sm_89").cycles)
    c = compare_sim(data)
    assert c["per_kernel"]["gemm_tile_4x4x4"] == pytest.approx(-1.0)


def test_input_errors(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    r = _run("--input", str(bad), "--compare-sim")
    assert r.returncode == 1 and "not a ptxopt GPU measurements file" in r.stderr
    r = _run("--input", str(tmp_path / "missing.json"))
    assert r.returncode == 1
