"""The evaluation cache: SQLite (stdlib ``sqlite3``) in WAL mode.

Where: ``--cache PATH``, else ``$PTXOPT_CACHE``, else
``~/.cache/ptxopt/eval.sqlite`` (``$XDG_CACHE_HOME`` is honoured).

Keys
----
Two kinds of key, both sha256 hex digests of a JSON document
(:func:`ptxopt.evaluate.keys.module_key` / ``pipeline_key``):

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
itself, an original ptxas rejects: its message names the user's lines).  A cached ``timeout`` is only reused while the time limit is not
larger than the one that produced it.

Durability: every result is written in its own transaction (result row and
pipeline alias together), committed before the evaluator moves on; with WAL
journaling a process killed with SIGKILL loses nothing already committed.
Concurrency: any number of processes may share one file; writers wait up to
``busy_timeout`` (60 s; ``$PTXOPT_CACHE_BUSY_TIMEOUT`` seconds) for each
other. A write that still cannot be committed is kept in memory and retried,
and saved beside the cache when the connection closes (merged in by the next
one): nothing computed is thrown away. Once a process has waited the whole
timeout for a cache, its later waits on that cache are short (a stuck writer
costs a run one timeout, not one per evaluation), and what it saved beside
the cache is still a hit for it.

Damage: :func:`check_cache` (called by the CLI before any work) refuses, with
one sentence, a file that is not SQLite, a damaged or truncated database,
another program's database and a cache of a newer schema (``--fresh-cache``
moves such a file aside instead); a single row that cannot be decoded is a
cache miss, recomputed and rewritten.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from pathlib import Path

from .cache_rows import decode_result
from .result import EvalResult

#: Bump when the stored JSON or the key derivation changes meaning.
#: 2: equivalence verdicts identical/hints-only/equal/inconclusive/differ (1 had
#: not-checked/mismatch/error/skipped), keys use the resolved arch, and
#: ``truncated``, ``coverage``, ``launch``, ``bad_input`` are new.
#: 3: the verdict ``proved`` (translation validation, :mod:`ptxopt.equivalence.prove`): a
#: candidate schema 2 stored as ``equal`` may now be ``proved`` with another note.
SCHEMA_VERSION = 3

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


def busy_timeout_default() -> float:
    """Seconds a writer waits for another's lock: ``$PTXOPT_CACHE_BUSY_TIMEOUT``, else 60."""
    try:
        t = float(os.environ.get("PTXOPT_CACHE_BUSY_TIMEOUT", "60"))
    except ValueError:
        return 60.0
    return t if 0 <= t < 1e6 else 60.0


#: caches (resolved path) this process waited a whole busy timeout for -> when a write last failed:
#: later writes wait only briefly, at most one try per RETRY_S, until one succeeds
_CONTENDED: dict[str, float] = {}
#: results this process saved beside a cache (resolved path -> [(result, pipeline key)]): still hits here
_SAVED: dict[str, list[tuple[EvalResult, str | None]]] = {}
#: why the last write of this process to a cache failed, when not for its lock (a full disk, a read-only folder)
_WRITE_ERRORS: dict[str, str] = {}
#: results of this process that could neither be committed nor saved beside the cache: (count, why)
_LOST: dict[str, tuple[int, str]] = {}
#: the short wait on a cache known to be held by another writer
SHORT_WAIT = 0.05
#: seconds between two tries to write to a cache known to be held
RETRY_S = 2.0


def _one_line(text: str) -> str:
    """SQLite's multi-line integrity reports (``*** in database main ***``, one line per page) as one line."""
    parts = [p.strip() for p in str(text).splitlines() if p.strip() and not p.strip().startswith("***")]
    return "; ".join(parts)


class CacheError(Exception):
    """The cache file cannot be used: not a database, damaged, another
    program's database, or written by a newer ptxopt (``why``: the reason
    alone; ``locked``: another process holds it, so it is not to be moved aside)."""

    def __init__(self, message: str, why: str | None = None, locked: bool = False, unwritable: bool = False):
        super().__init__(_one_line(message))
        self.why = _one_line(why or message)
        self.locked = locked
        self.unwritable = unwritable  # healthy but not writable here: never moved aside


def _unusable(path: Path, why: str, locked: bool = False) -> CacheError:
    return CacheError(f"the evaluation cache {path} cannot be used: {why}", why, locked)


def _is_lock(e: sqlite3.Error) -> bool:
    return isinstance(e, sqlite3.OperationalError) and ("locked" in str(e) or "busy" in str(e))


#: SQLite's words for a file it cannot write (a full disk, a size limit, a read-only folder or file system):
#: the cache is not damaged, it is not writable -- never moved aside, never called damaged
_UNWRITABLE = ("readonly", "read-only", "disk is full", "disk i/o error", "unable to open database file")


def _is_unwritable(e: BaseException) -> bool:
    return isinstance(e, sqlite3.OperationalError) and any(w in str(e).lower() for w in _UNWRITABLE)


def unsaved(path: str | Path) -> tuple[int, str] | None:
    """``(count, why)`` of results this process could neither commit to the cache at
    ``path`` nor save beside it; None when nothing was lost."""
    return _LOST.get(str(Path(path).expanduser().resolve()))


def write_error(path: str | Path) -> str | None:
    """Why this process's last write to the cache at ``path`` failed, when not for its lock."""
    return _WRITE_ERRORS.get(str(Path(path).expanduser().resolve()))


#: the first 16 bytes of every SQLite 3 database file
SQLITE_HEADER = b"SQLite format 3\x00"

#: reads that fail for these reasons are a cache miss (the row is recomputed and rewritten)
_BAD_ROW = (sqlite3.DatabaseError, ValueError, TypeError, KeyError, AttributeError)


def _expected_columns() -> dict[str, list[str]]:
    db = sqlite3.connect(":memory:")
    try:
        db.executescript(SCHEMA)
        return {t: [r[1] for r in db.execute(f"PRAGMA table_info({t})")] for t in ("results", "pipelines", "meta")}
    finally:
        db.close()


_COLUMNS = _expected_columns()


def _layout_problem(db: sqlite3.Connection, version: int) -> str | None:
    """Why the tables of ``db`` (at ``user_version`` ``version``) are not an
    evaluation cache of this or an older ptxopt, or None."""
    tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if version > SCHEMA_VERSION:
        return (f"written by a newer ptxopt (cache schema {version}; this ptxopt reads schema {SCHEMA_VERSION}); "
                "upgrade ptxopt or use another --cache")
    if version == 0:
        return None if not tables else f"another program's database (tables: {', '.join(sorted(tables))})"
    if "meta" not in tables:
        return f"another program's database (user_version {version}, no ptxopt 'meta' table)"
    if version == SCHEMA_VERSION:
        for table, cols in _COLUMNS.items():
            have = [r[1] for r in db.execute(f"PRAGMA table_info({table})")]
            missing = [c for c in cols if c not in have]
            if missing:
                return f"table {table!r} lacks column(s) {', '.join(missing)}: not a ptxopt evaluation cache"
    return None


def _sqlite_header_problem(path: Path) -> str | None:
    try:
        with open(path, "rb") as f:
            head = f.read(len(SQLITE_HEADER))
    except FileNotFoundError:
        return None
    except OSError as e:
        return f"cannot be read: {e.strerror or e}"
    if head and head != SQLITE_HEADER[: len(head)] or 0 < len(head) < len(SQLITE_HEADER):
        return "not an SQLite database"
    return None


def check_cache(path: str | Path, *, fresh: bool | None = False) -> list[str]:
    """Check, before any work, that the cache at ``path`` can be used.

    Detects a file that is not SQLite, a truncated or damaged database
    (``PRAGMA quick_check``), another program's database and a newer schema,
    and raises :class:`CacheError` with one clear sentence. With ``fresh``
    such a file is not touched but moved aside (``PATH.unusable-TIME``, its
    ``-wal``/``-shm`` with it) and a fresh cache is created at ``path``; the
    returned notes say so. An older schema of ptxopt's own is emptied and
    noted (it is only a cache). Returns notes for the user (possibly empty).
    """
    path = Path(path).expanduser()
    notes: list[str] = []
    try:
        why = _check_file(path, notes)
    except CacheError as e:  # locked or not writable: healthy; never moved aside
        raise CacheError(f"{e} (--cache PATH uses another file)", e.why, e.locked, e.unwritable) from None
    if why is None:
        return notes
    if not fresh:  # None: the command has no --fresh-cache
        offer = "--fresh-cache moves it aside and starts a new one; " if fresh is not None else ""
        raise CacheError(f"the evaluation cache {path} cannot be used: {why} ({offer}--cache PATH uses another file)")
    aside = path.with_name(f"{path.name}.unusable-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}")
    try:
        for suffix in ("", "-wal", "-shm"):
            src = Path(str(path) + suffix)
            if src.exists():
                src.rename(str(aside) + suffix)
    except OSError as e:
        raise CacheError(f"the evaluation cache {path} cannot be used ({why}) nor moved aside: "
                         f"{e.strerror or e}") from None
    notes.append(f"the evaluation cache {path} could not be used ({why}); it was moved to {aside} and a fresh "
                 "cache started")
    again = _check_file(path, notes)
    if again is not None:
        raise CacheError(f"a fresh evaluation cache at {path} cannot be used either: {again}")
    return notes


def _check_file(path: Path, notes: list[str]) -> str | None:
    why = _sqlite_header_problem(path)
    if why is not None:
        return why
    if path.exists():  # reads only: a file that cannot be used is left exactly as it was
        db = None
        try:
            db = sqlite3.connect(str(path), timeout=busy_timeout_default())
            rows = [r[0] for r in db.execute("PRAGMA quick_check(3)")]
        except sqlite3.DatabaseError as e:
            if _is_unwritable(e):  # a read-only folder: the WAL index cannot be made; not damage
                raise CacheError(f"cache not writable: {path}: {e}", f"not writable ({e})", unwritable=True) from None
            return f"damaged ({e})"
        finally:
            if db is not None:
                db.close()
        if rows != ["ok"]:
            return f"damaged ({_one_line('; '.join(rows))})"
    try:
        EvalCache(path, notes=notes).close()  # layout, schema, WAL; creates a missing cache
    except CacheError as e:
        if e.locked or e.unwritable:
            raise
        return e.why
    return None


def pending_files(path: str | Path) -> list[Path]:
    """The results saved beside the cache at ``path`` because they could not be committed."""
    path = Path(path).expanduser()
    return sorted(path.parent.glob(f"{path.name}.pending-*.jsonl"))


class EvalCache:
    """One connection to the cache file, per process: a cache opened before a
    fork never uses, commits through or closes the parent's connection in the
    child (:mod:`ptxopt.support.forksafe`); the child's first use opens its own.

    Reads never fail: a row that cannot be decoded is a miss (and is rewritten
    by the next :meth:`put`). Writes never lose a result: one that cannot be
    committed (another writer holds the lock longer than ``busy_timeout``, a
    damaged page) is kept, retried with every later write, and on
    :meth:`close` saved beside the cache as ``PATH.pending-PID.jsonl``, which
    the next process that opens the cache merges in.
    """

    def __init__(self, path: str | Path, *, busy_timeout: float | None = None, notes: list[str] | None = None):
        self.path = Path(path).expanduser()
        #: this file in the process-wide tables (_CONTENDED, _SAVED): resolved once, not per lookup
        self.shared_key = str(self.path.resolve())
        self.pid = os.getpid()
        self.busy_timeout = busy_timeout_default() if busy_timeout is None else busy_timeout
        busy_timeout = self._wait()
        self.pending: list[tuple[EvalResult, str | None, str | None]] = []
        self.aliases: list[tuple[str, str]] = []
        self.saved_pending: Path | None = None
        self.notes = notes if notes is not None else []
        self._db = None
        self._reopen = False  # a forked child: open a connection of its own when next needed
        self._open(busy_timeout)
        from ptxopt.support.forksafe import track

        track(self)

    @property
    def db(self):
        if self._db is None and self._reopen:  # in a forked child, first use: a connection of its own
            self._reopen = False
            self._open(self._wait())
        return self._db

    @db.setter
    def db(self, value) -> None:
        self._db = value

    def abandon_inherited(self) -> None:
        """In a forked child (:mod:`ptxopt.support.forksafe`): never touch the parent's
        connection again. What the parent had not committed yet is the
        parent's to commit; this process's own use opens a fresh connection."""
        if self._db is None:
            return
        from ptxopt.support.forksafe import abandon

        abandon(self._db)
        self._db = None
        self._reopen = True
        self.pid = os.getpid()
        self.pending, self.aliases = [], []

    def _open(self, busy_timeout: float) -> None:
        why = _sqlite_header_problem(self.path)
        if why is not None:
            raise _unusable(self.path, why)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.db = sqlite3.connect(str(self.path), timeout=busy_timeout, isolation_level=None)
            self._set_busy(busy_timeout)
            why = _layout_problem(self.db, self.db.execute("PRAGMA user_version").fetchone()[0])
            if why:  # before the switch to WAL: another program's file is not written to
                raise _unusable(self.path, why)
            mode = self.db.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if str(mode).lower() != "wal":
                raise _unusable(self.path, f"cannot switch to WAL journaling (got {mode})")
            self.db.execute("PRAGMA synchronous = NORMAL")  # WAL: committed = safe from a process kill
            self._init_schema()
        except CacheError:
            self.close()
            raise
        except sqlite3.DatabaseError as e:
            self.close()
            if _is_lock(e):
                raise _unusable(self.path, f"another process holds its lock ({e}; waited {busy_timeout:g} s)",
                                locked=True) from None
            if _is_unwritable(e):
                raise CacheError(f"cache not writable: {self.path}: {e}", f"not writable ({e})",
                                 unwritable=True) from None
            raise _unusable(self.path, f"damaged ({e})") from None
        except OSError as e:
            self.close()
            raise _unusable(self.path, f"cannot be created ({e.strerror or e})") from None
        self._merge_pending_files()

    def _set_busy(self, seconds: float) -> None:
        self.db.execute(f"PRAGMA busy_timeout = {int(seconds * 1000)}")

    def _wait(self) -> float:
        """How long a write waits for the lock: short once this process has waited the whole timeout."""
        return min(self.busy_timeout, SHORT_WAIT) if self.shared_key in _CONTENDED else self.busy_timeout

    def _held(self) -> bool:
        """Did a write of this process fail on this cache less than RETRY_S ago (then do not try now)?"""
        return time.monotonic() - _CONTENDED.get(self.shared_key, -RETRY_S) < RETRY_S

    def _failed(self) -> None:
        _CONTENDED[self.shared_key] = time.monotonic()
        self._set_busy(self._wait())

    def _init_schema(self) -> None:
        version = self.db.execute("PRAGMA user_version").fetchone()[0]
        if version == SCHEMA_VERSION:
            why = _layout_problem(self.db, version)
            if why:
                raise _unusable(self.path, why)
            return
        self.db.execute("BEGIN IMMEDIATE")
        try:
            version = self.db.execute("PRAGMA user_version").fetchone()[0]  # another process may have won
            why = _layout_problem(self.db, version)
            if why:
                raise _unusable(self.path, why)
            if version != SCHEMA_VERSION:
                if version != 0:  # an older layout of ptxopt's own: it is only a cache, start afresh
                    n = self.db.execute("SELECT COUNT(*) FROM results").fetchone()[0] if self._has("results") else 0
                    for table in ("pipelines", "results", "meta"):
                        self.db.execute(f"DROP TABLE IF EXISTS {table}")
                    self.notes.append(f"the evaluation cache {self.path} had schema {version} (this ptxopt uses "
                                      f"{SCHEMA_VERSION}); its {n} results were dropped")
                for statement in SCHEMA.split(";"):  # not executescript: it would commit early
                    if statement.strip():
                        self.db.execute(statement)
                self.db.execute("INSERT OR REPLACE INTO meta VALUES ('schema', ?)", (str(SCHEMA_VERSION),))
                self.db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            self.db.execute("COMMIT")
        except BaseException:
            try:  # SQLite may have rolled back itself (a full disk): the original error is the one to report
                self.db.execute("ROLLBACK")
            except sqlite3.Error:
                pass
            raise

    def _has(self, table: str) -> bool:
        return self.db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?",
                               (table,)).fetchone() is not None

    # -- reads ----------------------------------------------------------------
    def _row(self, sql: str, key: str) -> EvalResult | None:
        try:
            row = self.db.execute(sql, (key,)).fetchone()
            return None if row is None else decode_result(row[1], row[0])
        except _BAD_ROW:  # undecodable text or JSON, wrong types, a damaged page: a miss
            return None

    def _unwritten(self):
        """``(result, pipeline key)`` of what this process could not commit yet."""
        yield from ((r, pk) for r, pk, _ in self.pending)
        yield from _SAVED.get(self.shared_key, ())

    def get(self, key: str) -> EvalResult | None:
        hit = self._row("SELECT key, result_json FROM results WHERE key = ?", key)
        if hit is None:
            hit = next((r for r, _ in self._unwritten() if r.key == key), None)
        return hit

    def resolve(self, pipeline_key: str) -> EvalResult | None:
        hit = self._row("SELECT r.key, r.result_json FROM pipelines p JOIN results r ON r.key = p.result_key "
                        "WHERE p.key = ?", pipeline_key)
        if hit is None:
            hit = next((r for r, pk in self._unwritten() if pk == pipeline_key), None)
        return hit

    def __len__(self) -> int:
        return self.db.execute("SELECT COUNT(*) FROM results").fetchone()[0]

    def statuses(self) -> dict[str, int]:
        return dict(self.db.execute("SELECT status, COUNT(*) FROM results GROUP BY status").fetchall())

    # -- writes ---------------------------------------------------------------
    def put(self, result: EvalResult, pipeline_key: str | None = None, ptx_sha256: str | None = None) -> None:
        """Store ``result`` under ``result.key`` (and ``pipeline_key`` -> it), in one transaction.

        Never raises for the database: a write that cannot be committed now is
        kept and retried (see the class doc)."""
        if result.key is None:
            raise ValueError("a result without a key cannot be cached")
        self.pending.append((result.replace(cache_hit=False), pipeline_key, ptx_sha256))
        self.flush()

    def alias(self, pipeline_key: str, result_key: str) -> None:
        """Point ``pipeline_key`` at an existing result."""
        self.aliases.append((pipeline_key, result_key))
        self.flush()

    def flush(self) -> bool:
        """Commit every pending write; True when none is left."""
        if not self.pending and not self.aliases:
            return True
        if self._held():
            return False
        try:
            self._write(self.pending, self.aliases)
        except sqlite3.Error as e:
            # locked past busy_timeout, a full disk, or a damaged page: keep them; later writes (in
            # this connection and the next ones of this process) wait only briefly
            if not _is_lock(e):
                _WRITE_ERRORS[self.shared_key] = str(e)
            self._failed()
            return False
        self.pending, self.aliases = [], []
        if _CONTENDED.pop(self.shared_key, None) is not None:
            self._set_busy(self._wait())
        return True

    def _write(self, results, aliases) -> None:
        now = time.time()
        self.db.execute("BEGIN IMMEDIATE")
        try:
            for stored, pipeline_key, ptx_sha256 in results:
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
            for pipeline_key, result_key in aliases:
                self.db.execute("INSERT OR REPLACE INTO pipelines (key, result_key, created) VALUES (?, ?, ?)",
                                (pipeline_key, result_key, now))
            self.db.execute("COMMIT")
        except BaseException:
            try:
                self.db.execute("ROLLBACK")
            except sqlite3.Error:
                pass
            raise

    def _pending_path(self) -> Path:
        return self.path.with_name(f"{self.path.name}.pending-{self.pid}.jsonl")

    def _save_pending(self) -> None:
        """What could not be committed goes to ``PATH.pending-PID.jsonl`` (merged in by the next open)."""
        path = self._pending_path()
        size = path.stat().st_size if path.exists() else None
        try:
            with open(path, "a") as f:
                for r, pk, sha in self.pending:
                    f.write(json.dumps({"result": json.loads(r.dumps()), "pipeline_key": pk, "ptx_sha256": sha})
                            + "\n")
                for pk, rk in self.aliases:
                    f.write(json.dumps({"alias": [pk, rk]}) + "\n")
                f.flush()
                os.fsync(f.fileno())
        except OSError as e:  # a full disk: no file may claim to hold what it does not
            try:
                if size is None:
                    path.unlink()
                else:
                    os.truncate(path, size)
            except OSError:
                pass
            n, _ = _LOST.get(self.shared_key, (0, ""))
            _LOST[self.shared_key] = (n + len(self.pending), f"{path}: {e.strerror or e}")
            return
        self.saved_pending = path
        _SAVED.setdefault(self.shared_key, []).extend((r, pk) for r, pk, _ in self.pending)
        self.pending, self.aliases = [], []

    def _merge_pending_files(self) -> None:
        for f in pending_files(self.path) if not self._held() else ():
            results, aliases = [], []
            try:
                for line in f.read_text(errors="replace").splitlines():
                    try:
                        doc = json.loads(line)
                        if "alias" in doc:
                            pk, rk = doc["alias"]
                            if isinstance(pk, str) and isinstance(rk, str):
                                aliases.append((pk, rk))
                        else:
                            r = decode_result(json.dumps(doc["result"]))
                            pk, sha = doc.get("pipeline_key"), doc.get("ptx_sha256")
                            if r.key is not None and all(v is None or isinstance(v, str) for v in (pk, sha)):
                                results.append((r, pk, sha))
                    except _BAD_ROW:
                        continue
                self._write(results, aliases)
                f.unlink()
            except OSError:
                continue  # another process merged it first
            except sqlite3.Error:
                self._failed()  # the lock is held: a later open merges them
                break

    def clear(self) -> None:
        self.db.execute("BEGIN IMMEDIATE")
        self.db.execute("DELETE FROM pipelines")
        self.db.execute("DELETE FROM results")
        self.db.execute("COMMIT")

    def close(self) -> None:
        self._reopen = False  # a forked child that never used the cache: nothing to open, nothing to close
        if self._db is None:
            return
        if (self.pending or self.aliases) and os.getpid() == self.pid:
            self._set_busy(self._wait())
            if not self.flush():
                self._save_pending()
        try:
            self.db.close()
        except sqlite3.Error:
            pass
        self.db = None

    def __enter__(self) -> "EvalCache":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


__all__ = ["EvalCache", "CacheError", "SCHEMA", "SCHEMA_VERSION", "default_cache_path", "check_cache",
           "busy_timeout_default", "pending_files", "unsaved", "write_error"]
