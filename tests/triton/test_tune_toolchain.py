"""Tuning a Triton cache compiles with the ptxas command the hook will run.

The hook checks and judges with Triton's ptxas binary and flags
(``-lineinfo``, ``--regAllocOptLevel=2`` ...); tuning with ptxopt's own ptxas
and no flags estimated other SASS (a tuned gain that vanished in the hook).
``ptxopt search TRITON_CACHE`` now runs with Triton's command, records it per
kernel, and the hook reports a mismatch instead of silently judging again.
"""

from __future__ import annotations

import json
import os

import pytest

from ptxopt.triton.pipelines import TunedKernel, read_pipelines, source_hash, write_pipelines
from ptxopt.triton.tune_toolchain import Toolchain, from_record, mismatch, tuning_with

from cli_helpers import run_cli as run
from test_triton_tune import CORPUS, fake_entry


def test_default_flags_reach_ptxas_and_the_cache_keys(monkeypatch):
    from ptxopt.evaluate.candidate import Settings
    from ptxopt.evaluate.keys import fingerprint
    from ptxopt.toolchain import PtxasError, compile_ptx, toolchain_versions

    ptx = (CORPUS / "vector_add.ptx").read_text()
    monkeypatch.delenv("PTXOPT_PTXAS_FLAGS", raising=False)
    plain = fingerprint(Settings())
    assert "ptxas_flags" not in toolchain_versions()  # unset: the keys written so far stay valid
    compile_ptx(ptx, "sm_89")
    monkeypatch.setenv("PTXOPT_PTXAS_FLAGS", "--no-such-ptxas-flag")
    with pytest.raises(PtxasError):  # the flags reach ptxas (a compile of the same text is not answered from memo)
        compile_ptx(ptx, "sm_89")
    compile_ptx(ptx, "sm_89", extra_args=["-lineinfo"])  # a caller's own flags win
    monkeypatch.setenv("PTXOPT_PTXAS_FLAGS", "-lineinfo --regAllocOptLevel=2")
    assert toolchain_versions()["ptxas_flags"] == ["-lineinfo", "--regAllocOptLevel=2"]
    assert fingerprint(Settings()) != plain  # another SASS: evaluations are cached apart


def test_tuning_with_sets_and_restores_the_environment(monkeypatch):
    monkeypatch.setenv("PTXOPT_PTXAS_FLAGS", "-O3")
    monkeypatch.delenv("PTXOPT_PTXAS", raising=False)
    with tuning_with(Toolchain("/x/ptxas", "12.9.86", ("-lineinfo", "--fmad=false"))):
        assert os.environ["PTXOPT_PTXAS"] == "/x/ptxas"
        assert os.environ["PTXOPT_PTXAS_FLAGS"] == "-lineinfo --fmad=false"
    assert os.environ["PTXOPT_PTXAS_FLAGS"] == "-O3" and "PTXOPT_PTXAS" not in os.environ


def test_mismatch_says_what_differs():
    hook = Toolchain("/t/ptxas", "12.9.86", ("-lineinfo", "--regAllocOptLevel=2"))
    assert mismatch(Toolchain("/elsewhere/ptxas", "12.9.86", hook.flags), hook) == ""  # same version and flags
    assert "does not record" in mismatch(None, hook)
    line = mismatch(Toolchain("/p/ptxas", "12.9.86", ()), hook)
    assert "(no flags)" in line and "--regAllocOptLevel=2" in line and "judged again" in line
    assert "13.0.1" in mismatch(Toolchain("/p/ptxas", "13.0.1", hook.flags), hook)
    assert from_record(hook.record()) == hook and from_record({}) is None and from_record({"ptxas": 1}) is None


def test_a_launch_described_two_ways_is_one_launch():
    from ptxopt.triton.hook import _launch_key

    meta = "(from Triton's metadata: num_warps=4, shared=2048)"
    searched = f"performance launch: grid unknown, block 128x1x1, 2048 B dynamic shared {meta}; grid assumed: 2784 blocks; L2 cold"
    hooked = (f"performance launch: grid 2784x1x1, block 128x1x1, 2048 B dynamic shared {meta[:-1]}; grid assumed: "
              "2784 blocks (4 full waves at the original's occupancy)); L2 cold")
    assert _launch_key(searched) == _launch_key(hooked) == _launch_key(hooked.split(" (from")[0] + "; L2 cold")
    for other in (hooked.replace("2784 blocks", "2785 blocks"), hooked.replace("L2 cold", "L2 warm"),
                  hooked.replace("block 128x1x1", "block 256x1x1"), hooked.replace("2048 B", "0 B")):
        assert _launch_key(other) != _launch_key(searched), other
    assert _launch_key("one warp") == ("one warp",)


@pytest.mark.slow
def test_tuning_uses_and_records_the_ptxas_the_hook_runs(tmp_path):
    pytest.importorskip("triton")
    from ptxopt.triton.tune_toolchain import for_metadata

    cache = tmp_path / "cache"
    d = fake_entry(cache, "AAAA", "vector_add", "vector_add.ptx", enable_fp_fusion=False)
    out = tmp_path / "pipes.json"
    r = run("search", str(cache), "--budget", "2", "-q", "--cache", str(tmp_path / "e.sqlite"),
            "--pipelines-out", str(out))
    assert r.exit_code == 0, r.stderr
    want = for_metadata(json.loads((d / "vector_add.json").read_text()))
    assert "--regAllocOptLevel=2" in want.flags and "--fmad=false" in want.flags  # the kernel's own options
    assert "triton" in want.ptxas and f"tuning with Triton's {want.words()}" in r.stderr
    [k] = read_pipelines(out).kernels.values()
    assert k.toolchain == want.record()
    assert "PTXOPT_PTXAS_FLAGS" not in os.environ  # the CLI put the environment back


def test_kernels_needing_different_ptxas_commands_are_refused(tmp_path):
    pytest.importorskip("triton")
    cache = tmp_path / "cache"
    fake_entry(cache, "AAAA", "vector_add", "vector_add.ptx")
    fake_entry(cache, "BBBB", "relu_scale", "relu_scale.ptx", ptx_options="-O2")
    r = run("search", str(cache), "--budget", "1", "-q", "--cache", str(tmp_path / "e.sqlite"))
    assert r.exit_code == 2 and "different ptxas commands" in r.stderr and "--kernel" in r.stderr
    assert "Traceback" not in r.stderr


@pytest.mark.slow
def test_the_hook_reports_a_toolchain_mismatch(tmp_path, monkeypatch):
    """A pipelines file tuned with other flags: the pipeline is judged again and the report says why."""
    pytest.importorskip("triton")
    import warnings

    import ptxopt.triton as pt
    from ptxopt.testing.triton_corpus import compile_kernel

    monkeypatch.setenv("TRITON_DEFAULT_FP_FUSION", "1")
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "plain"))
    pt.disable()
    ptx = compile_kernel("vector_add").asm["ptx"]
    other = Toolchain("/ptxopt/ptxas", "12.9.86", ())
    kw = dict(verdict="equal", objective="throughput")
    files = {}
    for label, tc in (("other", other.record()), ("old", {})):
        files[label] = write_pipelines(tmp_path / f"{label}.json", [TunedKernel("vector_add", source_hash(ptx),
                                                                                "reorder_cp", toolchain=tc, **kw)])
    lines = {}
    for label, path in files.items():
        monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / label))
        pt.enable(pipelines=path, disk_cache=False)
        try:
            with warnings.catch_warnings(record=True) as w:
                warnings.simplefilter("always")
                compile_kernel("vector_add")
            [rep] = pt.report()
        finally:
            pt.disable()
        lines[label] = rep.why_pipeline
        assert any("ptxas" in str(x.message) and issubclass(x.category, pt.PtxoptTritonWarning) for x in w)
    assert "tuned with ptxas 12.9.86 (no flags)" in lines["other"] and "--regAllocOptLevel=2" in lines["other"]
    assert "does not record the ptxas" in lines["old"]


def test_ray_workers_get_the_drivers_ptxas(monkeypatch):
    from ptxopt.executor.raycluster import runtime_env

    monkeypatch.delenv("PTXOPT_PTXAS", raising=False)
    monkeypatch.delenv("PTXOPT_PTXAS_FLAGS", raising=False)
    assert "env_vars" not in runtime_env()
    with tuning_with(Toolchain("/x/ptxas", "12.9.86", ("-lineinfo",))):
        assert runtime_env()["env_vars"] == {"PTXOPT_PTXAS": "/x/ptxas", "PTXOPT_PTXAS_FLAGS": "-lineinfo"}
