"""SASS listings kept on disk between processes, for the Triton hook.

nvdisasm costs ~0.2 s of CPU per run whatever the cubin -- more than Triton's
whole compile of a small kernel -- and the in-process memo
(:mod:`ptxopt.measure.cubin_memo`) is empty in every new process. Triton
compiles the same cubins again across processes: a fresh Triton cache (a new
container, a CI job, ``TRITON_CACHE_DIR`` per run) with the same kernels, or a
new hook key (another pipeline, another ptxopt) over the same Triton PTX,
whose ptxas output is byte-identical. A :class:`SassStore` keeps each listing
in a file named by a digest of

* the nvdisasm that decoded it (path and version: :func:`cubin_memo.decoder_tag`),
* the source of what parses and splits nvdisasm's output (:data:`PARSER_SOURCES`),
* the cubin's sha256 (the architecture is in its ELF header),

so a listing is only reused for the same bytes, decoded by the same tool and
parsed by the same code. Only the hook opens a store (``enable(disk_cache=...)``),
and only while its estimate runs (:func:`stored`): searches and benchmarks
that measure a cold start never read one.

Files are written whole and renamed into place (concurrent processes see a
listing or nothing); a file that cannot be read or does not match its key is a
miss (and is overwritten). Nothing is ever deleted: the directory grows by
~2-50 KB per distinct cubin (zlib-compressed JSON), like Triton's own cache.
"""

from __future__ import annotations

import hashlib
import json
import threading
import zlib
from contextlib import contextmanager
from pathlib import Path

#: what turns nvdisasm's output into a :class:`~ptxopt.toolchain.SassListing` (part of every key)
PARSER_SOURCES = ("toolchain/sass.py", "toolchain/control_bits.py", "measure/disasm.py", "measure/sass_store.py")
FORMAT = 1


_PARSER: list = []


def _parser_digest() -> str:
    if not _PARSER:
        from ptxopt.support.digests import source_digest

        _PARSER.append(source_digest(*PARSER_SOURCES))
    return _PARSER[0]


class SassStore:
    """Listings by (decoder tag, cubin digest), one file each under ``root``."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        self.hits = self.misses = self.writes = 0

    def _path(self, key: str) -> tuple[Path, str]:
        full = f"{FORMAT}|{_parser_digest()}|{key}"
        return self.root / (hashlib.sha256(full.encode()).hexdigest() + ".sass.z"), full

    def get(self, key: str):
        """The listing stored under ``key`` (``decoder_tag() + cubin digest``), or None."""
        path, full = self._path(key)
        try:
            doc = json.loads(zlib.decompress(path.read_bytes()))
            if doc.get("key") != full:
                raise ValueError("another key")
            out = _listing(doc)
        except Exception:  # absent, unreadable, damaged, another format: a miss
            self.misses += 1
            return None
        self.hits += 1
        return out

    def put(self, key: str, listing) -> None:
        path, full = self._path(key)
        data = zlib.compress(json.dumps(_document(full, listing), separators=(",", ":")).encode(), 1)
        from ptxopt.support.outputs import OutputNotWritable, write_atomic

        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(path, data, sync=False)
        except (OSError, OutputNotWritable):  # a read-only or full disk: the listing is simply not kept
            return
        self.writes += 1


def _document(key: str, listing) -> dict:
    return {"key": key, "arch": listing.arch, "warnings": list(listing.warnings),
            "instructions": [[i.function, i.offset, i.guard, i.opcode, i.operands, i.low, i.high, i.symbol]
                             for i in listing.instructions],
            "labels": [[s, off, list(names)] for (s, off), names in listing.labels.items()]}


def _listing(doc: dict):
    from ptxopt.toolchain import Control, SassInstruction, SassListing

    ins = tuple(SassInstruction(function=f, offset=o, guard=g, opcode=op, operands=ops, low=lo, high=hi,
                                control=Control.from_high_word(hi), symbol=sym)
                for f, o, g, op, ops, lo, hi, sym in doc["instructions"])
    labels = {(s, off): tuple(names) for s, off, names in doc["labels"]}
    return SassListing(doc["arch"], ins, labels, tuple(doc["warnings"]), "")


_ACTIVE = threading.local()


@contextmanager
def stored(store: SassStore | None):
    """Within the block, in this thread, :func:`ptxopt.measure.cubin_memo.listings`
    also reads and writes ``store`` (None: nothing changes)."""
    prev = getattr(_ACTIVE, "store", None)
    _ACTIVE.store = store
    try:
        yield store
    finally:
        _ACTIVE.store = prev


def active() -> SassStore | None:
    """The store :func:`stored` opened in this thread, or None."""
    return getattr(_ACTIVE, "store", None)


__all__ = ["PARSER_SOURCES", "SassStore", "active", "stored"]
