"""``search --emit DIR``: names without doubled suffixes, sources recorded
relative to what was searched, long names shortened, the contract and
performance launch recorded, and a manifest that never describes files that
are not there -- when an artefact cannot be written (the JSON report is
still written) and when the run dies half way through placing them."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from ptxopt.cli import cli
from ptxopt.kernels.corpus import get

pytestmark = pytest.mark.slow  # each test runs a (one-evaluation) search

TEXT = get("gemm_tile_2x2x2").ptx_text()


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return str(tmp_path_factory.mktemp("cache") / "c.sqlite")


def _search(target, out, cache, *extra):
    return CliRunner().invoke(cli, ["search", str(target), "--budget", "1", "-q", "--emit", str(out),
                                    "--cache", cache, *map(str, extra)])


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _consistent(out: Path) -> list[dict]:
    """Every file the manifest names is there, with the digest it records."""
    man = out / "manifest.json"
    if not man.exists():
        return []
    kernels = json.loads(man.read_text())["kernels"]
    for k in kernels:
        if "ptx" in k:
            assert _sha((out / k["ptx"]).read_bytes()) == k["ptx_sha256"], k["ptx"]
            assert (out / k["cubin"]).is_file()
    return kernels


def _folder(root: Path, names, text=TEXT) -> Path:
    for n in names:
        (root / n).parent.mkdir(parents=True, exist_ok=True)
        (root / n).write_text(text)
    return root


def test_names_sources_and_launches(tmp_path, cache):
    src = _folder(tmp_path / "src", ["a.ptx", "sub/b.ptx"])
    out = tmp_path / "out"
    r = _search(src.resolve(), out, cache)  # an absolute folder
    assert r.exit_code == 0, r.output
    kernels = _consistent(out)
    assert sorted(k["source"] for k in kernels) == ["a.ptx", "sub/b.ptx"]
    assert sorted(k["ptx"] for k in kernels) == ["a.ptx", "sub/b.ptx"]
    assert not list(out.rglob("*.ptx.*")) and not list(out.glob(".ptxopt-emit-*"))
    assert str(tmp_path) not in (out / "manifest.json").read_text()
    # the manifest applies to a copy of the sources anywhere
    copy = _folder(tmp_path / "copy", ["a.ptx", "sub/b.ptx"])
    r = CliRunner().invoke(cli, ["apply", str(out / "manifest.json"), str(copy), str(tmp_path / "again")])
    assert r.exit_code == 0, r.output
    assert (tmp_path / "again" / "sub" / "b.ptx").read_bytes() == (out / "sub" / "b.ptx").read_bytes()

    k = tmp_path / "k.ptx"
    k.write_text(TEXT)
    r = _search(k, tmp_path / "one", cache, "--grid", "1,1,1", "--block", "1,1,1", "--perf-grid", "4,1,1",
                "--perf-block", "1,1,1")
    assert r.exit_code == 0, r.output
    (entry,) = _consistent(tmp_path / "one")
    assert entry["source"] == "k.ptx" and entry["ptx"] == "k.ptx" and entry["cubin"] == "k.cubin"
    assert entry["contract"]["grid"] == [1, 1, 1] and entry["launch"]
    assert entry["performance_launch"]["grid"] == [4, 1, 1]


def test_long_names_are_shortened(tmp_path, cache):
    long = "x" * 251 + ".ptx"  # 255 bytes: its .cubin would be 257
    src = _folder(tmp_path / ("d" * 200), [long, "y" * 120 + "/" + "z" * 200 + ".ptx"])
    out = tmp_path / "out"
    r = _search(src, out, cache, "--json-out", tmp_path / "r.json")
    assert r.exit_code == 0, r.output
    kernels = _consistent(out)
    assert len(kernels) == 2 and all("ptx" in k for k in kernels)
    for f in out.rglob("*"):
        assert all(len(part.encode()) <= 255 for part in f.relative_to(out).parts)
    assert json.loads((tmp_path / "r.json").read_text())["kernels"]


def test_an_artefact_that_cannot_be_written_keeps_the_report(tmp_path, cache):
    src = _folder(tmp_path / "src", ["a.ptx", "b.ptx"])
    out = tmp_path / "out"
    assert _search(src, out, cache).exit_code == 0
    first = json.loads((out / "manifest.json").read_text())["kernels"][0]
    (out / first["ptx"]).unlink()
    (out / first["ptx"] / "blocker").mkdir(parents=True)  # the first kernel's PTX cannot be replaced by a file
    report = tmp_path / "r.json"
    r = _search(src, out, cache, "--json-out", report)
    assert r.exit_code == 2, r.output
    assert "internal error" not in r.output
    assert json.loads(report.read_text())["kernels"]  # the report is written
    kernels = _consistent(out)
    assert len(kernels) == 2 and kernels[0]["error"] and "ptx" not in kernels[0] and "ptx" in kernels[1]


def test_a_run_killed_while_placing_leaves_no_stale_manifest(tmp_path, cache, monkeypatch):
    src = _folder(tmp_path / "src", ["a.ptx", "b.ptx"])
    out = tmp_path / "out"
    assert _search(src, out, cache).exit_code == 0
    _folder(src, ["a.ptx", "b.ptx"], TEXT.replace("ret;", "ret;\n// changed\n", 1))  # the next run ships other text
    real, placed = os.replace, []

    def dying_replace(a, b, *args, **kw):
        if Path(b).parent.resolve() == out.resolve():
            placed.append(b)
            if len(placed) == 2:  # the second file placed: the process is killed here
                raise SystemExit(137)
        return real(a, b, *args, **kw)

    monkeypatch.setattr(os, "replace", dying_replace)
    r = _search(src, out, cache)
    monkeypatch.setattr(os, "replace", real)
    assert r.exit_code == 137 and len(placed) == 2
    _consistent(out)  # no manifest, or one whose every file is there with its digest
    # a staging folder a killed run left behind is removed by the next emit
    (out / ".ptxopt-emit-999999999-x").mkdir()
    assert _search(src, out, cache).exit_code == 0
    assert len(_consistent(out)) == 2 and not list(out.glob(".ptxopt-emit-*"))
