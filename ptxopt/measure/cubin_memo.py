"""SASS listings and sim estimates remembered by the cubin's digest.

Different pipelines often give byte-identical cubins (ptxas reschedules
what ``reorder_*`` moved, a register budget above what the kernel uses
changes nothing, ...): a greedy search meets the same cubin again within a
step and across steps.  nvdisasm costs about 0.2 s of start-up per run
whatever the cubin, and the model's walk is Python; neither needs to run
twice for the same bytes.

* :func:`listings` -- one SASS listing per cubin: each distinct cubin not
  seen before goes through *one* batched nvdisasm run
  (:func:`ptxopt.measure.disasm.disassemble_many`), the rest come from the
  memo.  Keyed by ``sha256(cubin)`` and the nvdisasm that decoded it (its
  path and version: ``PTXOPT_NVDISASM`` may point elsewhere mid-process, and
  another release may decode the same bytes differently); the architecture
  is in the ELF header.
* :class:`EstimateMemo` -- a :class:`~ptxopt.measure.backend.Measurement`
  keyed by the cubin's digest plus everything else the model reads: the
  entry, the device (architecture), the objective and the launch (grid,
  block, shared bytes, assumed blocks, footprint, its description), the
  loop trip counts and the model's settings.  Two jobs that share a key get
  equal measurements; a job that differs in any of these gets its own entry.

Only successes are remembered: an nvdisasm failure or a model error is
recomputed (a transient crash must never stick).  Both memos are bounded
(least recently used out) and safe to use from the evaluator's helper
threads.
"""

from __future__ import annotations

import copy
import hashlib
import threading
from dataclasses import replace
from typing import Any, Callable, Hashable, Sequence

from ptxopt.support.bounded_memo import BoundedMemo
from ptxopt.support.session_state import Slot

#: Listings remembered (a 5,000-instruction kernel's listing is a few MB of objects).
MAX_LISTINGS = 256
#: Estimates remembered.
MAX_ESTIMATES = 4096


def digest(cubin: bytes) -> str:
    return hashlib.sha256(cubin).hexdigest()


class _LRU:
    def __init__(self, size: int) -> None:
        self.size = size
        self.data = BoundedMemo(size)
        self.lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get(self, key: Hashable) -> Any:
        with self.lock:
            v = self.data.lookup(key)
            if v is None:
                self.misses += 1
                return None
            self.hits += 1
            return v

    def put(self, key: Hashable, value: Any) -> None:
        with self.lock:
            self.data.remember(key, value)

    def clear(self) -> None:
        with self.lock:
            self.data.clear()
            self.hits = self.misses = 0


#: the active evaluation session's listings (:mod:`ptxopt.support.session_state`)
_LISTINGS = Slot("measure.cubin_memo.listings", lambda: _LRU(MAX_LISTINGS))


def decoder_tag() -> str:
    """The nvdisasm that decodes cubins now (path and version), for every key
    derived from a listing: a listing, and an estimate made from it."""
    from ptxopt.toolchain import find_nvdisasm

    tool = find_nvdisasm()
    return f"{tool.path}|{tool.full_version}|"


def listings(cubins: Sequence[bytes], digests: Sequence[str] | None = None) -> list:
    """A SASS listing (or the error for that cubin) per cubin, in order: the
    cubins not remembered, each distinct one once, in one batched nvdisasm run."""
    from .disasm import disassemble_many
    from .sass_store import active

    tag = decoder_tag()
    keys = [tag + d for d in (digests if digests is not None else [digest(c) for c in cubins])]
    memo = _LISTINGS.get()
    out: list = [memo.get(k) for k in keys]
    store = active()  # the Triton hook's listings on disk (sass_store), only while it estimates
    if store is not None:
        for i, k in enumerate(keys):
            if out[i] is None and (lst := store.get(k)) is not None:
                memo.put(k, lst)
                for j in range(i, len(keys)):  # and every later copy of the same cubin
                    if keys[j] == k:
                        out[j] = lst
    todo: dict[str, bytes] = {}
    for k, c, have in zip(keys, cubins, out):
        if have is None:
            todo.setdefault(k, c)
    if todo:
        got = dict(zip(todo, disassemble_many(list(todo.values()))))
        for k, lst in got.items():
            if not isinstance(lst, Exception):
                memo.put(k, lst)
                if store is not None:
                    store.put(k, lst)
        out = [got[k] if have is None else have for k, have in zip(keys, out)]
    return out


class EstimateMemo:
    """Measurements of the sim model by (cubin digest, entry, device, objective, launch, trips, settings)."""

    def __init__(self, size: int = MAX_ESTIMATES) -> None:
        self._lru = _LRU(size)

    def get_or_compute(self, key: Hashable, compute: Callable[[], Any]) -> Any:
        hit = self._lru.get(key)
        if hit is None:
            hit = compute()
            self._lru.put(key, hit)
        # a copy: a caller that fills in a field must not change another candidate's result
        return replace(hit, extra=copy.deepcopy(hit.extra))

    def clear(self) -> None:
        self._lru.clear()

    @property
    def stats(self) -> tuple[int, int]:
        return self._lru.hits, self._lru.misses


#: the active evaluation session's estimates (``ESTIMATES.get()``: its :class:`EstimateMemo`)
ESTIMATES = Slot("measure.cubin_memo.estimates", EstimateMemo)


def clear() -> None:
    """Forget every listing and estimate the active session remembers."""
    _LISTINGS.get().clear()
    ESTIMATES.get().clear()


def listing_stats() -> tuple[int, int]:
    memo = _LISTINGS.get()
    return memo.hits, memo.misses


__all__ = ["decoder_tag", "listings", "EstimateMemo", "ESTIMATES", "digest", "clear", "listing_stats"]
