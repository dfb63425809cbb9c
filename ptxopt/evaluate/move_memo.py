"""Which passes change a printed module, and its feature vector: remembered across states and processes.

A search state's action mask applies every pass to the state's module and
prints the result (:mod:`ptxopt.search.state`): on a 5,000-instruction
kernel that is a few hundred milliseconds of Python, about half a ptxas
compile, and a GRPO epoch asks for the masks of the same states in every
epoch and every new process. What a pass does to a module is decided by the
module's printed text, the code of the front end (passes, analyses,
printer) and, for a pass that uses the launch, the launch, so the answer is
remembered under

    sha256(front-end code digest, sha256 of the printed module)

(the second is the state's own :attr:`~ptxopt.search.state.State.digest`,
so the text is not hashed again) -- with the kernel's entry and performance
launch in it when a pass of the action list uses the launch
(:attr:`ptxopt.passes.base.Pass.uses_launch`: ``launch_bounds`` is applied
bound to the launch's block, so its outcome on one text differs between
launches, and with no launch at all; :attr:`~ptxopt.search.state.State.memo_launch`)
-- as one fact per pass: ``None`` (legal, and the printed module changes) or
the reason it is masked (``illegal: ...``, ``no change``, ``internal: ...``).
Conflicts with the pipeline are not facts of the module and are always
decided live. A state whose facts are known computes its mask without
applying a pass, and builds a child only for the action taken.

The policy's observation starts with the module's feature vector
(:func:`ptxopt.analysis.features.feature_vector`: dependency DAGs, critical
paths, register pressure -- tens of milliseconds per state, most of a warm
GRPO epoch), decided by the same text and code plus the entry name, so it
is remembered the same way (``features(digest, entry, compute)``).

Two levels: a bounded in-process dictionary, and optionally an SQLite file
(``MoveMemo(path)``; the search and the RL environment put it beside the
evaluation cache as ``<cache>.moves.sqlite``). The file is only a cache: a
row that cannot be read is a miss, a write that cannot commit is dropped
(and, the file being held or damaged, this process writes no more to it:
each try would wait the whole lock timeout again), and a file that is not
one of ours is never written to.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
from pathlib import Path

from ptxopt.support.bounded_memo import BoundedMemo
from ptxopt.support.session_state import Slot

#: in-process entries kept (one per printed module)
ENTRIES = 4096
#: seconds a write waits for another process's lock on the file
LOCK_TIMEOUT = 5.0
_FORMAT = "ptxopt-moves/2"

#: the in-process level, owned by the active evaluation session (:mod:`ptxopt.support.session_state`)
_LOCAL = Slot("evaluate.move_memo", lambda: BoundedMemo(lambda: ENTRIES, lock=threading.Lock()))
#: memo files (path) a write of this process failed on: read, never written again here
_NO_WRITES: set[str] = set()


def front_digest() -> str:
    """Digest of the code that decides a pass's output (the evaluator's own)."""
    from ptxopt.passes.registry import code_digests

    return code_digests()["front"]


def state_key(digest: str, launch: str = "") -> str:
    """The memo key of a printed module whose sha256 is ``digest``, with
    ``launch`` (non-empty: the entry and performance launch that passes
    which use the launch were bound to) in it."""
    tail = f"\0launch\0{launch}" if launch else ""
    return hashlib.sha256(f"{front_digest()}\0{digest}{tail}".encode()).hexdigest()


class MoveMemo:
    """Facts per printed module (by its sha256 ``digest``): ``get(digest)`` ->
    ``{pass: reason | None}`` or None; ``features(digest, entry, compute)``."""

    def __init__(self, path: str | Path | None = None):
        self.path = Path(path) if path is not None else None
        self._db: sqlite3.Connection | None = None
        self._broken = False
        from ptxopt.support.forksafe import track

        track(self)

    def abandon_inherited(self) -> None:
        """In a forked child: leave the parent's connection alone; the next use opens one of this process."""
        from ptxopt.support.forksafe import abandon

        abandon(self._db)
        self._db = None

    # -- the file ---------------------------------------------------------------
    def _conn(self) -> sqlite3.Connection | None:
        if self.path is None or self._broken:
            return None
        if self._db is None:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                db = sqlite3.connect(self.path, timeout=LOCK_TIMEOUT, isolation_level=None)
                db.execute("PRAGMA journal_mode=WAL")
                tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
                if tables and not tables <= {"moves", "meta", "features"}:
                    raise sqlite3.DatabaseError(f"not a ptxopt move memo (tables {sorted(tables)})")
                db.execute("CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL)")
                db.execute("CREATE TABLE IF NOT EXISTS moves (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
                db.execute("CREATE TABLE IF NOT EXISTS features (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
                row = db.execute("SELECT value FROM meta WHERE name='format'").fetchone()
                if row is None:
                    db.execute("INSERT OR IGNORE INTO meta VALUES ('format', ?)", (_FORMAT,))
                elif row[0] != _FORMAT:
                    raise sqlite3.DatabaseError(f"move memo format {row[0]!r}, this ptxopt writes {_FORMAT!r}")
                self._db = db
            except (sqlite3.Error, OSError):
                self._broken = True  # only a cache: go on without the file
                return None
        return self._db

    def _load(self, table: str, key: str, decode):
        """The remembered value of ``key``: in process, else from ``table`` of
        the file (read with ``decode``, which raises on a malformed row)."""
        local = _LOCAL.get()
        with local.lock:
            hit = local.get(key)
        if hit is None:
            db = self._conn()
            if db is not None:
                try:
                    row = db.execute(f"SELECT value FROM {table} WHERE key = ?", (key,)).fetchone()
                    hit = None if row is None else decode(row[0])
                except (sqlite3.Error, ValueError, TypeError):
                    hit = None  # a row that cannot be read is a miss
        if hit is not None:
            _remember(key, hit)
        return hit

    def _store(self, table: str, key: str, value: tuple) -> None:
        _remember(key, value)
        db = None if str(self.path) in _NO_WRITES else self._conn()
        if db is not None:
            try:  # floats read back exactly (repr); nan/inf go as NaN/Infinity and come back
                db.execute(f"INSERT OR REPLACE INTO {table} VALUES (?, ?)", (key, json.dumps(value)))
            except sqlite3.Error:
                _NO_WRITES.add(str(self.path))  # busy, read-only or damaged: loses cache entries, nothing else

    # -- the interface ----------------------------------------------------------
    def get(self, digest: str, launch: str = "") -> dict[str, str | None] | None:
        hit = self._load("moves", state_key(digest, launch), _decode_facts)
        return None if hit is None else dict(hit)

    def put(self, digest: str, facts: dict[str, str | None], launch: str = "") -> None:
        self._store("moves", state_key(digest, launch), tuple(facts.items()))

    def features(self, digest: str, entry: str | None, compute):
        """The feature vector of the module's ``entry``: remembered, or
        ``compute()`` (a 1-d float array), remembered from then on."""
        import numpy as np

        key = "features:" + state_key(f"{entry}\0{digest}")
        hit = self._load("features", key, _decode_vector)
        if hit is not None:
            return np.array(hit, dtype=np.float64)
        vec = np.asarray(compute(), dtype=np.float64)
        self._store("features", key, tuple(float(x) for x in vec))
        return vec

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None


def _remember(key: str, frozen: tuple) -> None:
    local = _LOCAL.get()
    with local.lock:
        local.remember(key, frozen)


def _decode_facts(text: str) -> tuple:
    items = json.loads(text)
    if not isinstance(items, list) or not all(
            isinstance(i, list) and len(i) == 2 and isinstance(i[0], str) and (i[1] is None or isinstance(i[1], str))
            for i in items):
        raise ValueError("malformed facts")
    return tuple((a, r) for a, r in items)


def _decode_vector(text: str) -> tuple:
    v = json.loads(text)
    if not isinstance(v, list) or not all(isinstance(x, (int, float)) for x in v):
        raise ValueError("malformed vector")
    return tuple(float(x) for x in v)


def clear_memo() -> None:
    """Forget the active session's in-process entries."""
    local = _LOCAL.get()
    with local.lock:
        local.clear()


def memo_beside(cache) -> MoveMemo:
    """The memo for an evaluation cache option (a path, ``"default"`` or None)."""
    if cache is None:
        return MoveMemo(None)
    if cache == "default":
        from ptxopt.evaluate.cache import default_cache_path

        cache = default_cache_path()
    p = Path(cache)
    return MoveMemo(p.with_name(p.name + ".moves.sqlite"))


__all__ = ["MoveMemo", "memo_beside", "clear_memo", "state_key", "ENTRIES"]
