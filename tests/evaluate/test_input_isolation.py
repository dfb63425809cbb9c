"""One bad input of a folder run is reported; the others are searched.

Folder runs and Triton caches: a kernel that does not parse, is not UTF-8 or
names an unknown ``.version`` is said at once, in the words a single file
gets, listed in ``--json`` with its error, and sets the exit code (2) -- the
good kernels are searched all the same. A Triton cache entry that is a
symbolic link is skipped with a warning, never read.
"""

from __future__ import annotations

import json
from pathlib import Path

from cli_helpers import run_cli as run
from test_triton_tune import CORPUS, fake_entry

from ptxopt.evaluate import Candidate


def test_a_bad_kernel_in_a_folder_does_not_stop_the_others(tmp_path):
    src = tmp_path / "kernels"
    src.mkdir()
    (src / "good.ptx").write_text(Candidate.from_corpus("gemm_tile_2x2x2", "").ptx)
    (src / "broken.ptx").write_text(".version 8.8\n.target sm_89\n.address_size 64\n.visible .entry k( {\n")
    (src / "latin1.ptx").write_bytes(b"// caf\xe9\n")
    out = tmp_path / "out.json"
    r = run("search", src, "--max-steps", "1", "-q", "--cache", tmp_path / "c.sqlite", "--json", out)
    assert r.exit_code == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert any(line.startswith(f"{src / 'broken.ptx'}:") and "error:" in line for line in lines), r.stderr
    assert any("latin1.ptx: not UTF-8 text" in line for line in lines), r.stderr
    kernels = {Path(k["kernel"]).name: k for k in json.loads(out.read_text())["kernels"]}
    assert set(kernels) == {"good.ptx", "broken.ptx", "latin1.ptx"}
    assert kernels["good.ptx"]["error"] is None and kernels["good.ptx"]["pipeline"] is not None
    assert kernels["broken.ptx"]["bad_input"] and kernels["latin1.ptx"]["bad_input"]


def test_a_single_bad_file_still_stops_at_once(tmp_path):
    p = tmp_path / "broken.ptx"
    p.write_text(".version 8.8\n.target sm_89\n.address_size 64\n.visible .entry k( {\n")
    r = run("search", p, "-q", "--cache", tmp_path / "c.sqlite")
    assert r.exit_code == 2 and r.stderr.startswith(f"{p}:") and "error:" in r.stderr


def test_a_symlinked_triton_entry_is_skipped_with_a_warning(tmp_path):
    cache = tmp_path / "cache"
    fake_entry(cache, "AAAA", "vector_add", "vector_add.ptx")
    d = fake_entry(cache, "BBBB", "relu_scale", "relu_scale.ptx")
    secret = tmp_path / "secret.txt"
    secret.write_text("s3cr3t-first-word and more\n")
    (d / "relu_scale.ptx").unlink()
    (d / "relu_scale.ptx").symlink_to(secret)
    out = tmp_path / "pipes.json"
    r = run("search", cache, "--budget", "1", "-q", "--cache", tmp_path / "e.sqlite", "--pipelines-out", out)
    assert r.exit_code == 0, r.stderr
    assert "s3cr3t" not in r.stderr + r.stdout
    assert f"skipped {d / 'relu_scale.ptx'}: a symbolic link (to {secret})" in r.stderr
    assert [k["name"] for k in json.loads(out.read_text())["kernels"]] == ["vector_add"]
    assert (CORPUS / "vector_add.ptx").exists()
