"""The driver owns the SQLite files; workers return the rows they would have written.

Why: a worker on another machine cannot reach the driver's evaluation cache
or move memo, and SQLite over a network file system is not safe. So every
task that evaluates runs against a *private* cache in a temporary directory
of its worker (and the move memo beside it, ``<cache>.moves.sqlite``, as
:func:`ptxopt.evaluate.move_memo.memo_beside` puts it), seeded with the
driver's rows for the task's kernel (:func:`seed_rows`: a resumed search
still hits), and returns what it added (:func:`new_rows`). The driver
writes those rows into its own files (:func:`merge_rows`), through
:class:`ptxopt.evaluate.cache.EvalCache` (so a locked file keeps them
pending, never loses them). The same path is taken by the local executor,
so the two give the same cache, key for key.

A row is data only: results are decoded and type-checked
(:func:`ptxopt.evaluate.cache_rows.decode_result`) before the driver stores
them; malformed rows are dropped.
"""

from __future__ import annotations

import sqlite3
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

#: the results table's columns a row carries (result_json holds the rest)
_RESULT_COLS = "key, ptx_sha256, result_json"


@dataclass
class Rows:
    """Cache rows in transit: ``results`` (key, ptx_sha256, result_json),
    ``pipelines`` (pipeline key, result key), ``memo`` (table, key, value)."""

    results: list = field(default_factory=list)
    pipelines: list = field(default_factory=list)
    memo: list = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.results) + len(self.pipelines) + len(self.memo)


def cache_file(cache) -> Path | None:
    """The file an evaluation-cache option names (a path, ``"default"`` or None)."""
    if cache is None:
        return None
    if cache == "default":
        from ptxopt.evaluate.cache import default_cache_path

        return default_cache_path()
    return Path(cache).expanduser()


def memo_path(cache_path: Path) -> Path:
    return cache_path.with_name(cache_path.name + ".moves.sqlite")


def _read(path: Path, sql: str, args=()) -> list:
    if not path.is_file():
        return []
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return db.execute(sql, args).fetchall()
    except sqlite3.Error:
        return []
    finally:
        db.close()


def seed_rows(cache_path, kernel: str) -> Rows:
    """The driver's rows for ``kernel`` (results by its label, the pipeline keys pointing at them)."""
    if cache_path is None:
        return Rows()
    path = Path(cache_path).expanduser()
    results = _read(path, f"SELECT {_RESULT_COLS} FROM results WHERE kernel = ?", (kernel,))
    pipelines = _read(path, "SELECT p.key, p.result_key FROM pipelines p JOIN results r ON r.key = p.result_key "
                            "WHERE r.kernel = ?", (kernel,))
    return Rows(results, pipelines)


@contextmanager
def private_cache(seed: Rows | None):
    """A fresh cache file in a temporary directory, holding ``seed``; yields its path."""
    with tempfile.TemporaryDirectory(prefix="ptxopt-task-") as d:
        path = Path(d) / "cache.sqlite"
        if seed:
            merge_rows(path, seed)
        yield path


def new_rows(path: Path, seed: Rows | None) -> Rows:
    """What the private cache at ``path`` (and the memo beside it) holds beyond ``seed``."""
    old_r = {r[0] for r in seed.results} if seed else set()
    old_p = {tuple(p) for p in seed.pipelines} if seed else set()
    results = [tuple(r) for r in _read(path, f"SELECT {_RESULT_COLS} FROM results") if r[0] not in old_r]
    pipelines = [tuple(p) for p in _read(path, "SELECT key, result_key FROM pipelines") if tuple(p) not in old_p]
    memo = [(t, k, v) for t in ("moves", "features") for k, v in _read(memo_path(path), f"SELECT key, value FROM {t}")]
    return Rows(results, pipelines, memo)


def merge_rows(cache_path, rows: Rows, *, cache=None) -> int:
    """Write ``rows`` into the cache at ``cache_path`` and its move memo; the number of results stored.
    ``cache``: the driver's open :class:`~ptxopt.evaluate.cache.EvalCache` of that file (kept open;
    a driver merging after every task opens it once)."""
    if cache_path is None or not rows:
        return 0
    from ptxopt.evaluate.cache import EvalCache
    from ptxopt.evaluate.cache_rows import decode_result

    path = Path(cache_path).expanduser()
    stored = 0
    if rows.results or rows.pipelines:
        own = cache is None
        cache = EvalCache(path) if own else cache
        try:
            for key, sha, text in rows.results:
                try:
                    r = decode_result(text, key)
                except ValueError:
                    continue  # not a result: dropped, never stored
                cache.pending.append((r.replace(cache_hit=False), None, sha))
                stored += 1
            cache.aliases.extend((pk, rk) for pk, rk in rows.pipelines if isinstance(pk, str) and isinstance(rk, str))
            cache.flush()  # what cannot be committed now stays pending; close() saves it beside the cache
        finally:
            if own:
                cache.close()
    if rows.memo:
        _merge_memo(memo_path(path), rows.memo)
    return stored


def _merge_memo(path: Path, memo: list) -> None:
    from ptxopt.evaluate.move_memo import MoveMemo

    m = MoveMemo(path)
    db = m._conn()  # creates the tables (or refuses a file that is not a memo)
    if db is None:
        return  # only a cache: a memo that cannot be written loses entries, nothing else
    try:
        db.execute("BEGIN IMMEDIATE")
        for table, key, value in memo:
            if table in ("moves", "features") and isinstance(key, str) and isinstance(value, str):
                db.execute(f"INSERT OR REPLACE INTO {table} VALUES (?, ?)", (key, value))
        db.execute("COMMIT")
    except sqlite3.Error:
        try:
            db.execute("ROLLBACK")
        except sqlite3.Error:
            pass
    finally:
        m.close()


__all__ = ["cache_file", "Rows", "seed_rows", "private_cache", "new_rows", "merge_rows", "memo_path"]
