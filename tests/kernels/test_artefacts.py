"""Artefacts a build can ship: ``compile -o K.cubin`` and
``search --emit DIR`` (best PTX, its cubin, DIR/manifest.json)."""

from __future__ import annotations

import hashlib
import json

from click.testing import CliRunner

from ptxopt.cli import cli
from ptxopt.kernels.corpus import get
from ptxopt.ptx.emit import emit
from ptxopt.ptx.parser import parse
from ptxopt.toolchain import compile_ptx

ELF = b"\x7fELF"


def test_compile_writes_the_cubin(tmp_path):
    spec = get("gemm_tile_2x2x2")
    out = tmp_path / "k.cubin"
    r = CliRunner().invoke(cli, ["compile", str(spec.ptx_path), "-o", str(out), "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["output"] == str(out)
    assert out.read_bytes() == compile_ptx(spec.ptx_text(), "sm_89").cubin
    assert out.read_bytes()[:4] == ELF


def test_compile_output_must_be_writable(tmp_path):
    spec = get("gemm_tile_2x2x2")
    r = CliRunner().invoke(cli, ["compile", str(spec.ptx_path), "-o", str(tmp_path / "no" / "k.cubin")])
    assert r.exit_code == 2 and "no such directory" in r.output


def test_search_emit_writes_ptx_cubin_and_manifest(tmp_path):
    spec = get("gemm_tile_4x4x4")
    out = tmp_path / "out"
    r = CliRunner().invoke(cli, ["search", "gemm_tile_4x4x4", "--max-steps", "1", "-q", "--emit", str(out),
                                 "--cache", str(tmp_path / "c.sqlite")])
    assert r.exit_code == 0, r.output
    doc = json.loads((out / "manifest.json").read_text())
    (k,) = doc["kernels"]
    assert k["kernel"] == "gemm_tile_4x4x4" and k["pipeline"] and k["verdict"] in ("proved", "equal", "hints-only")
    assert k["source_sha256"] == hashlib.sha256(spec.ptx_text().encode()).hexdigest()
    assert k["objective"] == "latency" and k["arch"] == "sm_89" and k["ptxas_version"]
    est = k["estimates"]
    assert est["cycles_kind"] == "ESTIMATE" and est["best_cycles"] < est["baseline_cycles"]
    ptx = (out / k["ptx"]).read_text()
    cubin = (out / k["cubin"]).read_bytes()
    assert hashlib.sha256(ptx.encode()).hexdigest() == k["ptx_sha256"]
    # the PTX written is the evaluated text in the source's layout: the same module, the same cubin
    canonical = emit(parse(ptx))
    assert hashlib.sha256(canonical.encode()).hexdigest() == k["evaluated_sha256"]
    assert cubin[:4] == ELF and cubin == compile_ptx(ptx, "sm_89").cubin
    assert compile_ptx(canonical, "sm_89").cubin == cubin
    # run -p of the manifest's pipeline reproduces the PTX
    r = CliRunner().invoke(cli, ["run", "-p", k["pipeline"], str(spec.ptx_path)])
    assert r.exit_code == 0 and r.stdout == ptx


def test_apply_reapplies_the_manifest_and_refuses_changed_sources(tmp_path):
    from ptxopt.kernels.corpus import corpus_root

    spec = get("gemm_tile_4x4x4")
    out = tmp_path / "out"
    r = CliRunner().invoke(cli, ["search", "gemm_tile_4x4x4", "--max-steps", "1", "-q", "--emit", str(out),
                                 "--cache", str(tmp_path / "c.sqlite")])
    assert r.exit_code == 0, r.output
    (k,) = json.loads((out / "manifest.json").read_text())["kernels"]
    assert k["source"] == spec.path
    again = tmp_path / "again"
    r = CliRunner().invoke(cli, ["apply", str(out / "manifest.json"), str(corpus_root()), str(again)])
    assert r.exit_code == 0, r.output
    assert (again / k["ptx"]).read_text() == (out / k["ptx"]).read_text()
    assert (again / k["cubin"]).read_bytes() == (out / k["cubin"]).read_bytes()

    changed = tmp_path / "src"
    (changed / spec.path).parent.mkdir(parents=True)
    (changed / spec.path).write_text(spec.ptx_text().replace("ret;", "ret;\n", 1))  # one byte more
    r = CliRunner().invoke(cli, ["apply", str(out / "manifest.json"), str(changed), str(tmp_path / "no")])
    assert r.exit_code == 2 and "is not the source searched" in r.output
    assert not (tmp_path / "no" / k["ptx"]).exists()
    doc = json.loads((out / "manifest.json").read_text())
    doc["kernels"][0]["evaluated_sha256"] = "0" * 64  # what the search evaluated is not what re-applying gives
    (tmp_path / "other.json").write_text(json.dumps(doc))
    r = CliRunner().invoke(cli, ["apply", str(tmp_path / "other.json"), str(corpus_root()), str(tmp_path / "no")])
    assert r.exit_code == 2 and "does not give the module the search evaluated" in r.output
    (tmp_path / "bad.json").write_text("{")
    r = CliRunner().invoke(cli, ["apply", str(tmp_path / "bad.json"), str(changed), str(tmp_path / "no")])
    assert r.exit_code == 2 and "not a search --emit manifest" in r.output
