"""Shared-memory race detection (``run_kernel(..., races=True)``).

Two accesses to one byte of ``.shared`` memory *race* when different threads
of a CTA make them in the same barrier interval (no CTA barrier was
released between them) and at least one is a store. Such a kernel's result
depends on the thread schedule, and a schedule the interpreter happens to
use may hide it (a max reduction gives the same maximum with a stale
operand, redundant warps store last the copy computed from complete data).
Detection does not depend on the schedule's luck: the accesses are logged
per byte (last writer and interval; reader, or "several", and interval), so
a conflict is seen whatever the order.

Atomics (``atom``/``red``) do not race with each other and are not logged.
Warp-level synchronisation (``bar.warp.sync``, shuffles) does not end an
interval: warp-synchronous shared-memory code is reported as racing, which
is why :mod:`ptxopt.equivalence.interpret` only compares the races of a transformed kernel
with those of its original (a race the original has too is not news).
"""

from __future__ import annotations

import numpy as np

from ptxopt.interp.errors import describe

#: descriptions kept per launch (the count goes on)
MAX_REPORTS = 3
_NONE = -1
_SEVERAL = -2


class RaceTracker:
    """Per-launch log of shared-memory accesses (see module doc)."""

    def __init__(self) -> None:
        self.epoch = 0  # barrier intervals, counted over the whole launch
        self.count = 0
        self.reports: list[str] = []
        self._state: dict[int, tuple] = {}
        self.muted = 0  # > 0 inside an atomic's own load/store

    def barrier(self) -> None:
        self.epoch += 1

    def _arrays(self, r):
        st = self._state.get(id(r))
        if st is None or st[0] is not r:
            n = r.data.shape[1]
            st = (r, np.full(n, _NONE, np.int64), np.full(n, -1, np.int64), np.full(n, _NONE, np.int64),
                  np.full(n, -1, np.int64))
            self._state[id(r)] = st  # keeps r alive: its id is not reused within the launch
        return st[1:]

    def access(self, r, off, nbytes: int, threads, write: bool, site, new=None) -> None:
        """Log an access of ``nbytes`` at byte offsets ``off`` of shared
        region ``r`` by ``threads``; ``new`` (stores): the bytes each thread
        stores. A store that leaves a byte as it was changes nothing and is
        not a write here (Triton's redundant stores of one value by every
        lane are not races)."""
        if self.muted:
            return
        threads = np.atleast_1d(np.asarray(threads, dtype=np.int64))
        off = np.broadcast_to(np.atleast_1d(np.asarray(off, dtype=np.int64)), threads.shape)
        b = (off[:, None] + np.arange(nbytes)).ravel()
        t = np.repeat(threads, nbytes)
        if write and new is not None:
            v = np.asarray(new, dtype=np.uint8).reshape(-1)
            if len(threads) > 1:
                # several threads of this instruction storing different values to one byte
                order = np.lexsort((v, b))
                sb, sv = b[order], v[order]
                clash = (sb[1:] == sb[:-1]) & (sv[1:] != sv[:-1])
                if clash.any():
                    byte = int(sb[1:][clash][0])
                    ts = np.unique(t[b == byte])
                    self._note(site, r, byte, int(ts[-1]), int(ts[0]), True, "two stores of different values "
                               "in one instruction")
            keep = r.data[0, b] != v
            if not keep.any():
                return
            b, t = b[keep], t[keep]
        w_tid, w_ep, r_tid, r_ep = self._arrays(r)
        ep = self.epoch
        other_writer = (w_ep[b] == ep) & (w_tid[b] != t)
        bad = other_writer
        if write:
            other_reader = (r_ep[b] == ep) & (r_tid[b] != t)
            bad = bad | other_reader
        dup = None
        if not write and len(threads) > 1:
            order = np.lexsort((t, b))
            sb, stt = b[order], t[order]
            same = (sb[1:] == sb[:-1]) & (stt[1:] != stt[:-1])
            if same.any():
                dup = sb[1:][same]
        if bad.any():
            k = int(np.flatnonzero(bad)[0])
            byte = int(b[k])
            if other_writer[k]:
                other, kind = int(w_tid[byte]), "write after write" if write else "read after write"
            else:
                other, kind = int(r_tid[byte]), "write after read"
            self._note(site, r, byte, int(t[k]), other, write, kind)
        if write:
            w_tid[b] = t
            w_ep[b] = ep
        else:
            prev = np.where(r_ep[b] == ep, r_tid[b], t)
            r_tid[b] = np.where(prev == t, t, _SEVERAL)
            r_ep[b] = ep
            if dup is not None:
                r_tid[dup] = _SEVERAL

    def _note(self, site, r, byte: int, me: int, other: int, write: bool, kind: str) -> None:
        self.count += 1
        if len(self.reports) >= MAX_REPORTS:
            return
        ins, cta = site
        by = "several threads" if other == _SEVERAL else f"tid={cta.tid_of(other)}"
        self.reports.append(f"{describe(ins)}: tid={cta.tid_of(me)} {'stores to' if write else 'loads'} byte "
                            f"{byte} of shared {r.name!r}, which {by} accessed in the same barrier interval "
                            f"({kind}), CTA {tuple(cta.ctaid)}")


__all__ = ["RaceTracker", "MAX_REPORTS"]
