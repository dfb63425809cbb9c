"""A damaged, foreign, newer or locked evaluation cache, against ``eval`` and ``search``:
a clear error, never a traceback or a wrong hit.

A cache that cannot be used is one ``ptxopt: error:`` line and exit 2 (or,
with ``--fresh-cache``, a fresh cache beside it); a bad row is a miss and is
rewritten; a held lock loses nothing. Whatever happens, the results are the
ones a clean cache gives. All runs are in-process on the smallest corpus
kernel.
"""

from __future__ import annotations

import json
import random
import sqlite3

import pytest

from ptxopt.evaluate.cache import SCHEMA_VERSION, EvalCache, pending_files

from cli_helpers import run_cli

KERNEL = "gemm_tile_2x2x2"
COMMANDS = {
    "eval": ("eval", f"corpus:{KERNEL}", "-p", "vec_st", "--json"),
    "search": ("search", KERNEL, "-q", "--json", "-"),
}


def _outcome(command: str, stdout: str) -> tuple:
    """What must not depend on the cache's state."""
    d = json.loads(stdout)
    if command == "eval":
        return d["status"], d["cycles"], d["verdict"], d["registers"]
    [k] = d["kernels"]
    return k["pipeline"], k["baseline_cycles"], k["best_cycles"], k["verdict"], k["error"]


def _run(command: str, cache, *extra):
    return run_cli(*COMMANDS[command], "--cache", str(cache), *extra)


def _all_hits(command: str, stdout: str) -> bool:
    d = json.loads(stdout)
    return d["cache_hit"] if command == "eval" else d["summary"]["cache_hits"] == d["summary"]["evaluations"]


@pytest.fixture(scope="module")
def clean(tmp_path_factory):
    """A cache filled by a clean ``eval`` and ``search``, and their outcomes."""
    path = tmp_path_factory.mktemp("clean") / "eval.sqlite"
    outcomes = {}
    for command in COMMANDS:
        r = _run(command, path)
        assert r.exit_code == 0, r.stderr
        outcomes[command] = _outcome(command, r.stdout)
    db = sqlite3.connect(path)
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    return path, outcomes


def _copy(clean_path, dest):
    db = sqlite3.connect(clean_path)
    db.execute("VACUUM INTO ?", (str(dest),))
    db.close()
    return dest


def _sql(path, *statements):
    db = sqlite3.connect(path)
    for s in statements:
        db.execute(s)
    db.commit()
    db.close()


def _damage(kind: str, clean_path, path):
    if kind == "foreign":  # another program's database at the cache path
        _sql(path, "CREATE TABLE users (id INTEGER, name TEXT)", "INSERT INTO users VALUES (1, 'a')")
        return path
    _copy(clean_path, path)
    data = bytearray(path.read_bytes())
    if kind == "truncated":
        path.write_bytes(data[: len(data) // 2])
    elif kind == "garbage":  # every page behind an intact header page overwritten
        page = int.from_bytes(data[16:18], "big")
        path.write_bytes(data[:page] + random.Random(18).randbytes(len(data) - page))
    elif kind == "newer":
        _sql(path, f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    return path


BAD_ROWS = {
    "non-utf8": "UPDATE results SET result_json = CAST(x'fffe00ff' AS TEXT)",
    "non-json": "UPDATE results SET result_json = '{not json'",
    "wrong-types": "UPDATE results SET result_json = json_set(result_json, '$.cycles', '306', '$.status', NULL)",
}


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("kind", ["truncated", "garbage", "foreign", "newer"])
def test_an_unusable_cache_is_one_line_and_exit_2(clean, tmp_path, kind, command):
    path = _damage(kind, clean[0], tmp_path / "eval.sqlite")
    before = path.read_bytes()
    r = _run(command, path)
    assert r.exit_code == 2, r.stdout
    [line] = r.stderr.strip().splitlines()
    assert line.startswith(f"ptxopt: error: the evaluation cache {path} cannot be used:")
    assert "--fresh-cache" in line and "Traceback" not in r.stderr
    assert path.read_bytes() == before  # left as it was


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("kind", ["garbage", "newer"])
def test_fresh_cache_moves_an_unusable_cache_aside(clean, tmp_path, kind, command):
    path = _damage(kind, clean[0], tmp_path / "eval.sqlite")
    before = path.read_bytes()
    r = _run(command, path, "--fresh-cache")
    assert r.exit_code == 0, r.stderr
    assert _outcome(command, r.stdout) == clean[1][command]
    [aside] = tmp_path.glob("eval.sqlite.unusable-*[0-9]")
    assert aside.read_bytes() == before
    assert "moved to" in r.stderr and len(EvalCache(path)) > 0


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("bad", BAD_ROWS)
def test_a_bad_row_is_a_miss_and_is_rewritten(clean, tmp_path, bad, command):
    path = _copy(clean[0], tmp_path / "eval.sqlite")
    _sql(path, BAD_ROWS[bad])
    r = _run(command, path)
    assert r.exit_code == 0, r.stderr
    assert _outcome(command, r.stdout) == clean[1][command]
    again = _run(command, path)  # the rows were rewritten: all hits now
    assert _outcome(command, again.stdout) == clean[1][command] and _all_hits(command, again.stdout)


@pytest.mark.parametrize("command", COMMANDS)
def test_a_held_lock_loses_nothing(clean, tmp_path, monkeypatch, command):
    """Another writer holds the lock past the busy timeout: the results are
    reported, kept beside the cache, and merged in once it lets go."""
    monkeypatch.setenv("PTXOPT_CACHE_BUSY_TIMEOUT", "0.3")
    path = tmp_path / "eval.sqlite"
    EvalCache(path).close()  # a healthy, empty cache
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        r = _run(command, path)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert r.exit_code == 0, r.stderr
    assert _outcome(command, r.stdout) == clean[1][command]
    [line] = r.stderr.strip().splitlines()
    assert line.startswith("ptxopt: note:") and "locked" in line
    assert pending_files(path)
    from ptxopt.evaluate import cache as cache_module

    for name in ("_CONTENDED", "_SAVED"):  # as a new process would
        monkeypatch.setattr(cache_module, name, {})
    EvalCache(path).close()  # the next open merges them
    assert not pending_files(path)
    again = _run(command, path)
    assert _outcome(command, again.stdout) == clean[1][command] and _all_hits(command, again.stdout)


def test_a_held_move_memo_costs_one_wait(tmp_path, monkeypatch):
    """The move memo beside the cache is held by another writer: one write
    waits the lock timeout, the others do not try."""
    import time

    from ptxopt.evaluate import move_memo
    from ptxopt.evaluate.move_memo import MoveMemo

    monkeypatch.setattr(move_memo, "LOCK_TIMEOUT", 0.3)
    path = tmp_path / "eval.sqlite.moves.sqlite"
    MoveMemo(path).put("0" * 64, {"vec_ld": None})
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        t0 = time.monotonic()
        for i in range(10):
            MoveMemo(path).put(f"{i:064d}", {"vec_ld": "no change"})
        assert time.monotonic() - t0 < 3 * 0.3
    finally:
        holder.execute("ROLLBACK")
        holder.close()


def test_a_lock_held_on_a_new_cache_is_exit_2_and_never_moved_aside(tmp_path, monkeypatch):
    """A cache that cannot even be created because another writer holds it is
    not damaged: --fresh-cache does not move it aside."""
    monkeypatch.setenv("PTXOPT_CACHE_BUSY_TIMEOUT", "0.2")
    path = tmp_path / "eval.sqlite"
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        r = _run("eval", path, "--fresh-cache")
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert r.exit_code == 2
    [line] = r.stderr.strip().splitlines()
    assert line.startswith("ptxopt: error:") and "holds its lock" in line
    assert [p.name for p in tmp_path.iterdir()] == ["eval.sqlite"]
