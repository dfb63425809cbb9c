"""The evaluation cache: SQLite (stdlib ``sqlite3``) in WAL mode.

Where: ``--cache PATH``, else ``$PTXOPT_CACHE``, else
``~/.cache/ptxopt/eval.sqlite`` (``$XDG_CACHE_HOME`` is honoured).

Keys
----
Two kinds of key, both sha256 hex digests of a JSON document
(:func:`ptxopt.evaluate.core.module_key` / ``pipeline_key``):

* the **result key** (``results.key``) hashes the *printed* transformed PTX,
  the arch, the backend (name and model version), the toolchain versions
  (:func:`ptxopt.toolchain.toolchain_versions`), the evaluator's schema
  version and a digest of the evaluator's and interpreter's source, plus what
  equivalence is checked against: the printed original and the launch
  (manifest entry or default geometry) and the trial count.  Any pipeline
  that leaves the module unchanged prints the same text and so finds the same
  result: it is never recompiled or re-measured.
* the **pipeline key** (``pipelines.key``) hashes the original PTX as given,
  the canonical pipeline string and the same settings, plus a digest of the
  front end and passes' source.  It lets a repeated (kernel, pipeline)
  request skip parsing and the passes; it points at a result key.
  Failures that happen before there is a printed module (``parse``,
  ``illegal``) are stored under their pipeline key.

Failures are cached like successes (their ``status`` is the category), except
those marked ``cacheable=False`` (environment problems, crashes of ptxopt
itself).  A cached ``timeout`` is only reused while the time limit is not
larger than the one that produced it.

Durability: every result is written in its own transaction (result row and
pipeline alias together), committed before the evaluator moves on; with WAL
journaling a process killed with SIGKILL loses nothing already committed.
Concurrency: any number of processes may share one file; writers wait up to
``busy_timeout`` for each other.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from pathlib import Path

from .result import EvalResult

#: Bump when the stored JSON or the key derivation changes meaning.
#: 2: equivalence verdicts identical/hints-only/equal/inconclusive/differ (1 had
#: not-checked/mismatch/error/skipped), keys use the resolved arch, and
#: ``truncated``, ``coverage``, ``launch``, ``bad_input`` are new.
SCHEMA_VERSION = 2

SCHEMA = """
CREATE TABLE IF NOT EXISTS results (
    key               TEXT PRIMARY KEY,   -- sha256 hex of the result key document
    kernel            TEXT NOT NULL,      -- corpus id / file / entry name of the first request
    pipeline          TEXT NOT NULL,      -- canonical pipeline of the first request
    arch              TEXT NOT NULL,
    backend           TEXT NOT NULL,
    status            TEXT NOT NULL,      -- 'ok' or a failure category
    cycles            REAL,               -- NULL for failures
    estimate          INTEGER NOT NULL,   -- 1: model estimate (sim), 0: hardware measurement (gpu)
    registers         INTEGER,
    spill_bytes       INTEGER,
    sass_instructions INTEGER,
    ptx_sha256        TEXT,               -- sha256 of the printed PTX (NULL before printing)
    result_json       TEXT NOT NULL,      -- the whole EvalResult (EvalResult.to_json)
    created           REAL NOT NULL       -- unix time
);
CREATE TABLE IF NOT EXISTS pipelines (
    key        TEXT PRIMARY KEY,          -- sha256 hex of the pipeline key document
    result_key TEXT NOT NULL REFERENCES results(key),
    created    REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS meta (
    name  TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
"""


def default_cache_path() -> Path:
    """``$PTXOPT_CACHE``, else ``$XDG_CACHE_HOME/ptxopt/eval.sqlite`` (``~/.cache``)."""
    env = os.environ.get("PTXOPT_CACHE")
    if env:
        return Path(env).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base).expanduser() / "ptxopt" / "eval.sqlite"


class CacheError(Exception):
    """The cache file cannot be opened or has an unknown layout."""


class EvalCache:
    """One connection to the cache file; open one per process (not shared across fork)."""

    def __init__(self, path: str | Path, *, busy_timeout: float = 60.0):
        self.path = Path(path).expanduser()
        self.pid = os.getpid()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.db = sqlite3.connect(str(self.path), timeout=busy_timeout, isolation_level=None)
            self.db.execute(f"PRAGMA busy_timeout = {int(busy_timeout * 1000)}")
            mode = self.db.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if str(mode).lower() != "wal":
                raise CacheError(f"{self.path}: cannot switch to WAL journaling (got {mode})")
            self.db.execute("PRAGMA synchronous = NORMAL")  # WAL: committed = safe from a process kill
            self._init_schema()
        except sqlite3.DatabaseError as e:
            raise CacheError(f"cannot open the evaluation cache {self.path}: {e}") from None
        except OSError as e:
            raise CacheError(f"cannot create the evaluation cache {self.path}: {e.strerror or e}") from None

    def _init_schema(self) -> None:
        version = self.db.execute("PRAGMA user_version").fetchone()[0]
        if version == SCHEMA_VERSION:
            return
        self.db.execute("BEGIN IMMEDIATE")
        try:
            version = self.db.execute("PRAGMA user_version").fetchone()[0]  # another process may have won
            if version != SCHEMA_VERSION:
                if version != 0:  # an older layout: it is only a cache, start afresh
                    for table in ("pipelines", "results", "meta"):
                        self.db.execute(f"DROP TABLE IF EXISTS {table}")
                for statement in SCHEMA.split(";"):  # not executescript: it would commit early
                    if statement.strip():
                        self.db.execute(statement)
                self.db.execute("INSERT OR REPLACE INTO meta VALUES ('schema', ?)", (str(SCHEMA_VERSION),))
                self.db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            self.db.execute("COMMIT")
        except BaseException:
            self.db.execute("ROLLBACK")
            raise

    # -- reads ----------------------------------------------------------------
    def get(self, key: str) -> EvalResult | None:
        row = self.db.execute("SELECT result_json FROM results WHERE key = ?", (key,)).fetchone()
        return EvalResult.from_json(json.loads(row[0])) if row else None

    def resolve(self, pipeline_key: str) -> EvalResult | None:
        row = self.db.execute(
            "SELECT r.result_json FROM pipelines p JOIN results r ON r.key = p.result_key WHERE p.key = ?",
            (pipeline_key,)).fetchone()
        return EvalResult.from_json(json.loads(row[0])) if row else None

    def __len__(self) -> int:
        return self.db.execute("SELECT COUNT(*) FROM results").fetchone()[0]

    def statuses(self) -> dict[str, int]:
        return dict(self.db.execute("SELECT status, COUNT(*) FROM results GROUP BY status").fetchall())

    # -- writes ---------------------------------------------------------------
    def put(self, result: EvalResult, pipeline_key: str | None = None, ptx_sha256: str | None = None) -> None:
        """Store ``result`` under ``result.key`` (and ``pipeline_key`` -> it), in one transaction."""
        if result.key is None:
            raise ValueError("a result without a key cannot be cached")
        stored = result.replace(cache_hit=False)
        now = time.time()
        self.db.execute("BEGIN IMMEDIATE")
        try:
            self.db.execute(
                "INSERT OR REPLACE INTO results (key, kernel, pipeline, arch, backend, status, cycles, estimate, "
                "registers, spill_bytes, sass_instructions, ptx_sha256, result_json, created) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (stored.key, stored.kernel, stored.pipeline, stored.arch, stored.backend, stored.status,
                 stored.cycles, int(stored.estimate), stored.registers, stored.spill_bytes,
                 stored.sass_instructions, ptx_sha256, stored.dumps(), now))
            if pipeline_key is not None:
                self.db.execute("INSERT OR REPLACE INTO pipelines (key, result_key, created) VALUES (?, ?, ?)",
                                (pipeline_key, stored.key, now))
            self.db.execute("COMMIT")
        except BaseException:
            self.db.execute("ROLLBACK")
            raise

    def alias(self, pipeline_key: str, result_key: str) -> None:
        """Point ``pipeline_key`` at an existing result."""
        self.db.execute("INSERT OR REPLACE INTO pipelines (key, result_key, created) VALUES (?, ?, ?)",
                        (pipeline_key, result_key, time.time()))

    def clear(self) -> None:
        self.db.execute("BEGIN IMMEDIATE")
        self.db.execute("DELETE FROM pipelines")
        self.db.execute("DELETE FROM results")
        self.db.execute("COMMIT")

    def close(self) -> None:
        try:
            self.db.close()
        except sqlite3.Error:
            pass

    def __enter__(self) -> "EvalCache":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


__all__ = ["EvalCache", "CacheError", "SCHEMA", "SCHEMA_VERSION", "default_cache_path"]
