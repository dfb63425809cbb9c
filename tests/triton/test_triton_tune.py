"""Offline tune, online apply: ``ptxopt search TRITON_CACHE_DIR`` writes a
pipelines file; ``ptxopt.triton.enable(pipelines=FILE)`` applies exactly
those pipelines at the next compile."""

import json
import shutil
from pathlib import Path

import pytest

from ptxopt.triton.cache_dir import is_cache_dir, scan
from ptxopt.triton.pipelines import (
    FORMAT,
    PipelinesError,
    TunedKernel,
    read_pipelines,
    source_hash,
    write_pipelines,
)

from cli_helpers import run_cli as run

CORPUS = Path(__file__).resolve().parents[2] / "corpus" / "triton"


def fake_entry(root: Path, key: str, name: str, ptx_file: str, **extra) -> Path:
    """A cache folder as Triton 3.9 writes it (metadata trimmed to what is read)."""
    d = root / key
    d.mkdir(parents=True)
    ptx = (CORPUS / ptx_file).read_text()
    (d / f"{name}.ptx").write_text(ptx)
    md = {"hash": key, "target": {"backend": "cuda", "arch": 89, "warp_size": 32}, "num_warps": 4,
          "num_ctas": 1, "shared": 0, "triton_version": "3.9.0", "name": name, **extra}
    (d / f"{name}.json").write_text(json.dumps(md))
    (d / f"__grp__{name}.json").write_text(json.dumps({"child_paths": {}}))
    return d


# ---------------------------------------------------------------------------
# fast tier: no Triton needed
# ---------------------------------------------------------------------------


def test_scan_reads_kernels_and_skips_rewritten_ones(tmp_path):
    fake_entry(tmp_path, "AAAA", "vector_add", "vector_add.ptx")
    fake_entry(tmp_path, "BBBB", "relu_scale", "relu_scale.ptx",
               ptxopt={"pipeline": "maxnreg_64", "changed": True})
    fake_entry(tmp_path, "CCCC", "softmax_row", "softmax_row.ptx",
               ptxopt={"pipeline": "", "changed": False})
    (tmp_path / "DDDD").mkdir()
    (tmp_path / "DDDD" / "autotune.json").write_text("{}")  # not a kernel
    assert is_cache_dir(tmp_path) and not is_cache_dir(tmp_path / "AAAA")
    kernels, skipped = scan(tmp_path)
    assert [k.name for k in kernels] == ["softmax_row", "vector_add"]
    k = kernels[1]
    assert k.source_hash == source_hash((CORPUS / "vector_add.ptx").read_text())
    assert k.label == "vector_add@AAAA"
    [c0, *_] = k.contracts()
    assert c0.block == (128, 1, 1) and c0.entry == "vector_add" and c0.origin == "triton"
    assert len(skipped) == 1 and "relu_scale" in skipped[0] and "not Triton's own" in skipped[0]


def test_pipelines_file_round_trip_and_errors(tmp_path):
    p = write_pipelines(tmp_path / "p.json", [TunedKernel("k", "ab" * 32, "vec_ld,maxnreg_64", verdict="equal"),
                                              TunedKernel("j", "cd" * 32, "")])
    t = read_pipelines(p)
    assert t.names() == {"k", "j"}
    assert t.kernels[("k", "ab" * 32)].pipeline == "vec_ld,maxnreg_64"
    bad = tmp_path / "bad.json"
    for text, msg in [("{", "invalid JSON"), ('{"format": "x"}', "not a ptxopt pipelines file"),
                      (json.dumps({"format": FORMAT, "kernels": {}}), '"kernels" must be a list'),
                      (json.dumps({"format": FORMAT, "kernels": [{"name": "k"}]}), "needs string"),
                      (json.dumps({"format": FORMAT, "kernels": [{"name": "k", "source_hash": "0",
                                                                  "pipeline": "no_such_pass"}]}), "kernels[0] (k)")]:
        bad.write_text(text)
        with pytest.raises(PipelinesError, match=msg.replace("[", r"\[").replace("(", r"\(").replace(")", r"\)")):
            read_pipelines(bad)
    with pytest.raises(PipelinesError, match="cannot read"):
        read_pipelines(tmp_path / "missing.json")


def test_pipelines_out_needs_a_triton_cache(tmp_path):
    shutil.copy(CORPUS / "vector_add.ptx", tmp_path / "v.ptx")
    r = run("search", str(tmp_path / "v.ptx"), "--pipelines-out", str(tmp_path / "p.json"))
    assert r.exit_code == 2 and "not a Triton cache directory" in r.stderr


def test_search_a_fake_triton_cache(tmp_path):
    cache = tmp_path / "cache"
    fake_entry(cache, "AAAA", "vector_add", "vector_add.ptx")
    out = tmp_path / "pipes.json"
    r = run("search", str(cache), "--budget", "2", "--cache", str(tmp_path / "eval.sqlite"), "-q",
            "--pipelines-out", str(out))
    assert r.exit_code == 0, r.stderr
    t = read_pipelines(out)
    [k] = t.kernels.values()
    assert k.name == "vector_add" and k.source_hash == source_hash((CORPUS / "vector_add.ptx").read_text())
    doc = json.loads(out.read_text())
    assert doc["source"] == str(cache.resolve()) and doc["strategy"] == "greedy"
    r = run("search", str(cache), "--grid", "1,1,1", "--cache", str(tmp_path / "eval.sqlite"))
    assert r.exit_code == 2 and "come from Triton's metadata" in r.stderr


# ---------------------------------------------------------------------------
# slow tier: real Triton, real search
# ---------------------------------------------------------------------------

TUNED = ["matmul_f16", "transpose", "vector_add", "relu_scale"]


@pytest.mark.slow
def test_tune_a_triton_cache_then_apply_exactly_those(tmp_path, monkeypatch):
    pytest.importorskip("triton")
    import ptxopt.triton as pt
    from ptxopt.testing.triton_corpus import compile_kernel

    monkeypatch.setenv("TRITON_DEFAULT_FP_FUSION", "1")
    monkeypatch.setenv("PTXOPT_CACHE", str(tmp_path / "ptxopt" / "eval.sqlite"))  # the hook's disk cache too
    tune_cache = tmp_path / "tune"
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tune_cache))
    pt.disable()
    plain = {n: compile_kernel(n).asm["ptx"] for n in TUNED}

    out = tmp_path / "pipes.json"
    r = run("search", str(tune_cache), "--cache", str(tmp_path / "eval.sqlite"), "-q", "--pipelines-out", str(out))
    assert r.exit_code == 0, r.stderr
    table = read_pipelines(out)
    assert len(table.kernels) == len(TUNED)
    assert any(k.pipeline for k in table.kernels.values())  # the sim model finds something (matmul_f16)

    # the next compile, in a fresh process-like state (new cache dir)
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "apply"))
    pt.enable(pipelines=out)
    try:
        got = {n: compile_kernel(n) for n in TUNED}
        # another specialisation of a tuned kernel: another source hash, left alone
        other = compile_kernel("vector_add", constexprs={"BLOCK": 128})
        reports = pt.report()
    finally:
        pt.disable()
    assert len(reports) == len(TUNED) + 1
    from ptxopt.triton.tune_toolchain import for_metadata

    for name, rep in zip(TUNED, reports):
        tuned = table.kernels[(rep.name, source_hash(plain[name]))]
        assert rep.source_hash == tuned.source_hash
        assert rep.pipeline == tuned.pipeline, name
        assert tuned.objective == "throughput" and "block " in tuned.launch, name  # the hook's objective
        # tuned with the ptxas command Triton's cubin stage runs (binary and flags), as the hook checks
        hook_cmd = for_metadata(got[name].metadata._asdict())
        assert tuned.toolchain == hook_cmd.record() and "--regAllocOptLevel=2" in tuned.toolchain["flags"], name
        if tuned.pipeline:  # the same estimate as tuned: the tuned gain holds in the hook
            assert "tuned with the same ptxas and flags" in rep.why_pipeline, (name, rep.why_pipeline)
            # under the same check launch (loop trips), performance launch and SASS: the very figures tuned
            assert not any("launches differ" in w for w in rep.warnings), rep.warnings
            assert tuned.check_launch and (rep.estimate.before, rep.estimate.after) == \
                (tuned.baseline_cycles, tuned.best_cycles), (name, rep.estimate, tuned)
            assert rep.objective == tuned.objective and "as tuned" in rep.why_pipeline, name
            assert rep.changed and rep.verdict in ("proved", "equal", "hints-only"), (name, rep.reason)
            assert got[name].asm["ptx"] != plain[name]
        else:
            assert not rep.changed and "nothing better" in rep.why_pipeline
            assert got[name].asm["ptx"] == plain[name]
    last = reports[-1]
    assert last.name == "vector_add" and not last.pipeline
    assert "source changed since tuning" in last.why_pipeline
    assert other.asm["cubin"][:4] == b"\x7fELF"


def test_tuning_records_the_objective_and_launch_the_hook_judges_by(tmp_path):
    """Tuning a Triton cache optimises throughput on Triton's block, as the hook will judge."""
    fake_entry(tmp_path / "cache", "AAAA", "vector_add", "vector_add.ptx")
    out = tmp_path / "pipes.json"
    r = run("search", str(tmp_path / "cache"), "--budget", "2", "-q", "--cache", str(tmp_path / "e.sqlite"),
            "--pipelines-out", str(out))
    assert r.exit_code == 0, r.stderr
    [k] = read_pipelines(out).kernels.values()
    assert k.objective == "throughput" and "block 128x1x1" in k.launch


def test_triton_stays_optional():
    import subprocess
    import sys

    code = ("import sys, ptxopt, ptxopt.triton, ptxopt.triton.cache_dir, ptxopt.triton.pipelines, "
            "ptxopt.testing.triton_corpus, ptxopt.cli.search; "
            "assert 'triton' not in sys.modules, 'triton imported'")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       cwd=Path(__file__).resolve().parents[2])
    assert r.returncode == 0, r.stderr


def test_signature_and_contracts_from_triton_metadata():
    from ptxopt.triton.contract_from_triton import ALTERNATIVES, triton_contracts
    from ptxopt.triton.signature import parse_signature

    ttir = ('module {\n  tt.func private @helper(%a: i32) {}\n'
            '  tt.func public @k(%x_ptr: !tt.ptr<f16> {tt.divisibility = 16 : i32} loc("x_ptr"(#loc)), '
            '%n: i64 loc("n"(#loc)), %s: f32 loc(#loc3), %desc: !tt.tensordesc<tensor<16x16xf16, #shared>> '
            'loc("d"(#loc))) attributes {noinline = false} {\n')
    args = parse_signature(ttir)
    assert [(a.name, a.short) for a in args] == [("x_ptr", "*fp16"), ("n", "i64"), ("s", "fp32"),
                                                 ("desc", "!tt.tensordesc<tensor<16x16xf16, #shared>>")]
    assert args[0].is_pointer and not args[1].is_pointer
    assert parse_signature(ttir, "other") is None and parse_signature("module {}") is None
    params = [("k_param_0", "u64"), ("k_param_1", "u64"), ("k_param_2", "f32"), ("k_param_3", "u64"),
              ("k_param_4", "u64"), ("k_param_5", "u64")]
    cs = triton_contracts("k", params, {"num_warps": 8, "shared": 4096}, args[:3])
    assert len(cs) == len(ALTERNATIVES)
    g = cs[0]
    assert g.block == (256, 1, 1) and g.grid == (1, 1, 1) and g.shared_bytes == 4096
    assert g.scalars == {"k_param_1": 16}  # the i64 scalar is not taken for a pointer
    assert [c.int_scalar for c in cs] == list(ALTERNATIVES)
    assert "num_warps=8" in cs[0].source and "x_ptr: *fp16, n: i64, s: fp32" in cs[0].source


def test_a_broken_ptx_in_the_cache_is_a_clear_error(tmp_path):
    d = fake_entry(tmp_path / "cache", "AAAA", "vector_add", "vector_add.ptx")
    p = d / "vector_add.ptx"
    lines = p.read_text().splitlines()
    lines[29] = "\tbogus.instr %r1, ;"
    p.write_text("\n".join(lines) + "\n")
    r = run("search", str(tmp_path / "cache"), "--budget", "1", "-q", "--cache", str(tmp_path / "e.sqlite"))
    assert r.exit_code == 2
    assert r.stderr.startswith(f"{p}:30:") and "error:" in r.stderr and "Traceback" not in r.stderr
