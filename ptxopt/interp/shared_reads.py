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
    barrier, :meth:`note` for each shared load. A load only appends its
    offsets (the interpreter issues one per thread group, warp by warp under
    the warp-serial schedules); :meth:`finish` marks the bytes, a few
    numpy operations per interval and variable instead of per load."""

    def __init__(self) -> None:
        #: per CTA in launch order: ``(ctaid, {(interval, name): packed bytes})``
        self.ctas: list[tuple[tuple, dict]] = []
        self._threads = 0
        self._count: np.ndarray | None = None  # barriers each thread of the running CTA has passed, once they differ
        self._uniform = 0  # the live threads' common count, or -1 once they differ
        self._log: list = []  # (interval, region, bytes per access, byte offsets) of the running CTA
        self._ctaid = None
        self._interned: dict[bytes, bytes] = {}

    def start(self, ctaid: tuple, threads: int) -> None:
        self._threads = threads
        self._count = None
        self._uniform = 0
        self._log = []
        self._ctaid = tuple(ctaid)

    def barrier(self, idx, everyone: bool) -> None:
        """Threads ``idx`` passed a barrier; ``everyone``: they are all the
        CTA's live threads (a ``__syncthreads``), which keeps the counts of
        the threads that can still read equal: one number until a barrier
        releases only some (a named barrier with a thread count)."""
        if self._uniform >= 0 and everyone:
            self._uniform += 1
            return
        if self._count is None:
            self._count = np.full(self._threads, self._uniform, dtype=np.int64)
            self._uniform = -1
        self._count[idx] += 1

    def note(self, region, off: np.ndarray, nbytes: int, threads) -> None:
        """Threads ``threads`` read ``nbytes`` at byte offsets ``off`` (one per
        thread, or one for all; a fresh array, kept until :meth:`finish`) of
        shared region ``region``."""
        if self._uniform >= 0:
            self._log.append((self._uniform, region, nbytes, off))
            return
        ep = self._count[threads]
        off = np.broadcast_to(off, ep.shape)
        for e in np.unique(ep):
            self._log.append((int(e), region, nbytes, off[ep == e]))

    def finish(self) -> None:
        """Close the running CTA's record: per shared variable read, one bool
        row per interval it was read in, marked with one store per access
        width, packed row by row."""
        by_region: dict = {}
        for entry in self._log:
            by_region.setdefault(entry[1], []).append(entry)
        rec = {}
        for region, entries in by_region.items():
            intervals = sorted({e[0] for e in entries})
            row = {iv: k for k, iv in enumerate(intervals)}
            width = region.data.shape[1]
            marks = np.zeros((len(intervals), width), dtype=bool)
            for nbytes in {e[2] for e in entries}:
                group = [e for e in entries if e[2] == nbytes]
                lens = [len(e[3]) for e in group]
                off = np.concatenate([e[3] for e in group]) if len(group) > 1 else group[0][3]
                base = np.repeat(np.array([row[e[0]] * width for e in group], dtype=np.intp), lens)
                _mark(marks.reshape(-1), off + base, nbytes, region.base)
            packed = np.packbits(marks[:, : region.size], axis=1)
            for iv, bits in zip(intervals, packed):
                b = bits.tobytes()
                rec[(iv, region.name)] = self._interned.setdefault(b, b)
        self.ctas.append((self._ctaid, rec))
        self._log = []


#: a word of ``n`` bytes that are all True, per word size: marks an aligned access in one store
_WORDS = {1: (np.uint8, 1), 2: (np.uint16, 0x0101), 4: (np.uint32, 0x0101_0101),
          8: (np.uint64, 0x0101_0101_0101_0101)}


def _mark(arr: np.ndarray, off: np.ndarray, nbytes: int, base: int) -> None:
    """Set ``arr[o : o + nbytes]`` for each offset ``o`` of ``off``. Accesses
    are naturally aligned (checked by :meth:`ptxopt.interp.device_memory.Memory.locate`),
    so where the region's base is too, each is a whole word of ``arr``."""
    word = min(nbytes, 8)
    if word in _WORDS and nbytes % word == 0 and base % word == 0 and arr.size % word == 0:
        dt, ones = _WORDS[word]
        words = arr.view(dt)
        first = off // word
        for k in range(nbytes // word):
            words[first + k] = ones
    else:
        arr[(off[:, None] + np.arange(nbytes)).ravel()] = True


__all__ = ["SharedReads"]
