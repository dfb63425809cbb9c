"""Shared-memory read footprints (``run_kernel(..., shared_reads=True)``).

A shared-memory read shifted by one element in a reduction tree (thread
``t`` of the ``s = 32`` step reading ``smax[t + 33]`` instead of
``smax[t + 32]``) drops a subtree's partial and reads one already counted.
The global read footprints (:mod:`ptxopt.equivalence.footprint`) cannot see
it: every input element is still loaded once, into shared memory; and the
result differs only when a block's extreme sits in the lost subtree, which
random inputs rarely arrange. What does show it is *which shared bytes are
read when*: here ``smax[32]`` in the original's interval only, ``smax[64]``
in the candidate's only.

So, per CTA, this records the set of ``(barrier interval, shared variable,
byte)`` that the CTA's loads read (``ld``, ``ldu``, ``ldmatrix``, the load
half of an atomic). A thread's interval is the number of CTA barriers
(``bar.sync``/``barrier.sync``/``bar.red``) it has passed so far, counted per
thread, so the numbering does not depend on the schedule (a named barrier
that releases some threads moves only theirs). A correct rewrite reads the
same shared bytes between the same barriers: a vector load reads the bytes
of the scalar loads it replaces, a reorder does not cross a barrier, and an
unrolled loop passes the same barriers in the same order. Sets, not counts:
reading a byte twice is no difference.

Each CTA's record is ``{(interval, variable name): packed bits, one per byte
of the variable}``; records equal in value are kept once (most CTAs read
alike), so a launch of many CTAs costs little memory.
"""

from __future__ import annotations

import numpy as np


class SharedReads:
    """The recorder of one launch (see module doc): :meth:`start` and
    :meth:`finish` around each CTA, :meth:`barrier` when threads pass a
    barrier, :meth:`note` for each shared load."""

    def __init__(self) -> None:
        #: per CTA in launch order: ``(ctaid, {(interval, name): packed bytes})``
        self.ctas: list[tuple[tuple, dict]] = []
        self._count: np.ndarray | None = None  # barriers each thread of the running CTA has passed
        self._uniform = 0  # the live threads' common count, or -1 once they differ
        self._cur: dict = {}  # (interval, region) -> bool per byte, for the running CTA
        self._ctaid = None
        self._interned: dict[bytes, bytes] = {}

    def start(self, ctaid: tuple, threads: int) -> None:
        self._count = np.zeros(threads, dtype=np.int64)
        self._uniform = 0
        self._cur = {}
        self._ctaid = tuple(ctaid)

    def barrier(self, idx, everyone: bool) -> None:
        """Threads ``idx`` passed a barrier; ``everyone``: they are all the
        CTA's live threads (a ``__syncthreads``), which keeps the counts of
        the threads that can still read equal."""
        self._count[idx] += 1
        if self._uniform >= 0 and everyone:
            self._uniform += 1
        else:
            self._uniform = -1

    def note(self, region, off, nbytes: int, threads) -> None:
        """Threads ``threads`` read ``nbytes`` at byte offsets ``off`` (one per
        thread, or one for all) of shared region ``region``."""
        off = np.asarray(off, dtype=np.intp).reshape(-1)
        if self._uniform >= 0:
            self._mark(self._uniform, region, off, nbytes)
            return
        ep = self._count[np.asarray(threads, dtype=np.intp).reshape(-1)]
        off = np.broadcast_to(off, ep.shape)
        for e in np.unique(ep):
            self._mark(int(e), region, off[ep == e], nbytes)

    def _mark(self, interval: int, region, off, nbytes: int) -> None:
        key = (interval, region)
        arr = self._cur.get(key)
        if arr is None:
            arr = self._cur[key] = np.zeros(region.data.shape[1], dtype=bool)
        if nbytes == 1:
            arr[off] = True
        else:
            arr[(off[:, None] + np.arange(nbytes)).ravel()] = True

    def finish(self) -> None:
        rec = {}
        for (interval, region), arr in self._cur.items():
            bits = np.packbits(arr[: region.size]).tobytes()
            rec[(interval, region.name)] = self._interned.setdefault(bits, bits)
        self.ctas.append((self._ctaid, rec))
        self._cur = {}


__all__ = ["SharedReads"]
