"""Outputs are written whole or not at all; shared streams are refused (ptxopt.support.outputs).

A full disk is a small tmpfs (root only; skipped elsewhere), a file-size
limit is RLIMIT_FSIZE in a child interpreter.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ptxopt.support.outputs import OutputNotWritable, StreamLock, write_atomic

ROOT = Path(__file__).resolve().parents[2]


def _cli(*args, timeout=120):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "ptxopt.cli", *map(str, args)], capture_output=True, text=True,
                          env=env, timeout=timeout, cwd=ROOT)


class _Disk(type(Path())):
    """A mount point with ``fill()`` (use up the space left) and ``read_only()``."""

    def fill(self) -> None:
        try:
            with open(self / "fill", "ab") as f:
                while True:
                    f.write(b"\0" * 4096)
                    f.flush()
        except OSError:
            pass

    def read_only(self) -> None:
        subprocess.run(["mount", "-o", "remount,ro", str(self)], check=True, capture_output=True)


@pytest.fixture
def small_disk(tmp_path):
    """A 256 KiB tmpfs (root only)."""
    mnt = tmp_path / "disk"
    mnt.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    p = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mnt)], capture_output=True)
    if p.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {p.stderr.decode().strip()}")
    try:
        yield _Disk(mnt)
    finally:
        if subprocess.run(["umount", str(mnt)], capture_output=True).returncode != 0:
            subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


def test_write_atomic_replaces_whole_files(tmp_path):
    p = tmp_path / "out.json"
    write_atomic(p, "one\n")
    write_atomic(p, b"two\n")
    assert p.read_text() == "two\n" and [q.name for q in tmp_path.iterdir()] == ["out.json"]
    assert (p.stat().st_mode & 0o777) == (0o666 & ~_umask())  # the permissions of a plain open(), not mkstemp's


def _umask() -> int:
    old = os.umask(0)
    os.umask(old)
    return old


def test_a_file_size_limit_keeps_the_previous_file(tmp_path):
    p = tmp_path / "out.json"
    p.write_text('{"previous": true}\n')
    code = ("import resource, sys\nresource.setrlimit(resource.RLIMIT_FSIZE, (1000, 1000))\n"
            "from ptxopt.support.outputs import write_atomic, OutputNotWritable\n"
            "try:\n    write_atomic(sys.argv[1], 'x' * 5000)\nexcept OutputNotWritable as e:\n"
            "    print(e)\n    sys.exit(2)\n")
    r = subprocess.run([sys.executable, "-c", code, str(p)], capture_output=True, text=True, cwd=ROOT,
                       env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=60)
    assert r.returncode == 2, r.stderr
    assert r.stdout.startswith(f"output not writable: {p}: File too large (the previous file is kept)")
    assert p.read_text() == '{"previous": true}\n' and [q.name for q in tmp_path.iterdir()] == ["out.json"]


def test_search_json_on_a_full_disk_exits_2_and_keeps_the_previous_file(small_disk, tmp_path):
    out = small_disk / "out.json"
    out.write_text('{"previous": true}\n')
    small_disk.fill()
    r = _cli("search", "corpus:gemm_tile_2x2x2", "--max-steps", "1", "-q", "--cache", tmp_path / "c.sqlite",
             "--json", out)
    assert r.returncode == 2, r.stderr
    assert f"output not writable: {out}: No space left on device (the previous file is kept)" in r.stderr
    assert "Traceback" not in r.stderr
    assert json.loads(out.read_text()) == {"previous": True}


def test_a_cache_that_fills_the_disk_never_claims_a_file_beside_it(small_disk, tmp_path):
    """Writes that fail for a full disk are not 'locked by another process', and
    no empty pending file is named as holding the results."""
    from ptxopt.evaluate import EvalCache, EvalResult
    from ptxopt.evaluate import cache as cache_mod

    path = small_disk / "c.sqlite"
    c = EvalCache(path, busy_timeout=0.1)
    small_disk.fill()
    big = "x" * 20000
    for i in range(20):
        c.put(EvalResult(kernel="k", pipeline=f"p{i}", status="ok", backend="sim", arch="sm_89", estimate=True,
                         cycles=1.0, key=f"key{i}", error=None, notes=(big,)))
    c.close()
    files = cache_mod.pending_files(path)
    assert all(f.stat().st_size > 0 for f in files)  # a file named as holding results holds them
    lost = cache_mod.unsaved(path)
    assert lost is not None and lost[0] > 0 and "No space left on device" in lost[1]
    assert "full" in (cache_mod.write_error(path) or "") or "I/O" in (cache_mod.write_error(path) or "")


def test_a_read_only_file_system_is_not_a_damaged_cache(small_disk):
    """EROFS: the healthy cache is 'not writable' (exit 2), never 'damaged', never moved aside."""
    from ptxopt.evaluate import EvalCache

    EvalCache(small_disk / "c.sqlite").close()
    small_disk.read_only()
    r = _cli("eval", "corpus:gemm_tile_2x2x2", "--cache", small_disk / "c.sqlite", "--fresh-cache")
    assert r.returncode == 2, r.stderr
    assert "cache not writable" in r.stderr and "damaged" not in r.stderr and "moved" not in r.stderr, r.stderr
    assert sorted(p.name for p in small_disk.iterdir()) == ["c.sqlite"]


def test_two_live_runs_cannot_share_a_record_file(tmp_path):
    rec = tmp_path / "steps.jsonl"
    rec.write_text("a line of the other run\n")
    with StreamLock(rec):
        r = _cli("search", "corpus:gemm_tile_2x2x2", "--max-steps", "1", "-q", "--cache", tmp_path / "c.sqlite",
                 "--record", rec)
        assert r.returncode == 2, r.stderr
        assert f"output not writable: {rec}: being written by another running ptxopt (pid {os.getpid()})" in r.stderr
        assert rec.read_text() == "a line of the other run\n"  # refused before truncating
    with pytest.raises(OutputNotWritable, match="being written by another"), StreamLock(rec):
        StreamLock(rec)
    assert not Path(f"{rec}.lock").exists()


def test_a_file_size_limit_is_not_a_damaged_cache(tmp_path):
    """EFBIG on a new cache: 'cache not writable', nothing moved aside (not 'damaged': the cache is fine)."""
    code = ("import resource, sys\nresource.setrlimit(resource.RLIMIT_FSIZE, (2000, 2000))\n"
            "from ptxopt.evaluate.cache import check_cache, CacheError\n"
            "try:\n    check_cache(sys.argv[1], fresh=True)\nexcept CacheError as e:\n"
            "    print(e, e.unwritable)\n")
    r = subprocess.run([sys.executable, "-c", code, str(tmp_path / "c.sqlite")], capture_output=True, text=True,
                       cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=60)
    assert r.stdout.startswith(f"cache not writable: {tmp_path / 'c.sqlite'}") and "True" in r.stdout, r.stdout
    assert not any("unusable" in p.name for p in tmp_path.iterdir())


def test_a_checkpoint_on_a_full_disk_keeps_the_previous_one(small_disk):
    """train --out on a full disk: exit 2 naming the path (OutputNotWritable), no half checkpoint, no .tmp left."""
    pytest.importorskip("torch")
    from ptxopt.search import observation_names
    from ptxopt_rl.checkpoint import load_policy, save_policy
    from ptxopt_rl.policy import Policy, PolicyConfig

    policy = Policy(PolicyConfig(obs_dim=len(observation_names()), hidden=4, layers=1))
    path = small_disk / "bc.pt"
    save_policy(path, policy, meta={"first": True})
    big = Policy(PolicyConfig(obs_dim=len(observation_names()), hidden=256, layers=2))
    small_disk.fill()
    with pytest.raises(OutputNotWritable, match=f"output not writable: {path}: No space left on device"):
        save_policy(path, big, meta={"second": True})
    assert load_policy(path)[1]["first"] is True
    assert sorted(p.name for p in small_disk.iterdir()) == ["bc.pt", "fill"]
