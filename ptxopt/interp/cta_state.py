"""Run-time state: one CTA at a time, one frame per function activation.

Threads of a CTA are vectorised: a register is a numpy array with one element
per thread, and an instruction runs for a *selection* of threads at once.
A selection is either :data:`ALL` (``slice(None)``, every thread: indexing
returns views and costs nothing) or a sorted ``intp`` array of linear thread
indices (``tid.x + ntid.x * (tid.y + ntid.y * tid.z)``). Warps are consecutive
runs of 32 linear indices, as on the hardware.
"""

from __future__ import annotations

import numpy as np

ALL = slice(None)

WARP = 32


def indices(cta: "CTA", sel) -> np.ndarray:
    """The thread indices a selection stands for."""
    return cta.all_idx if sel is ALL else sel


class CTA:
    """One cooperative thread array: geometry, special registers, memory,
    liveness and the bookkeeping shared by all frames."""

    def __init__(self, launch, ctaid: tuple[int, int, int], mem, shared_regions, fill):
        self.launch = launch
        self.ntid = launch.block
        self.nctaid = launch.grid
        self.ctaid = ctaid
        bx, by, bz = self.ntid
        self.T = T = bx * by * bz
        self.all_idx = np.arange(T, dtype=np.intp)
        lin = self.all_idx
        self.tid = (
            (lin % bx).astype(np.uint32),
            ((lin // bx) % by).astype(np.uint32),
            (lin // (bx * by)).astype(np.uint32),
        )
        self.laneid = (lin % WARP).astype(np.uint32)
        self.warpid = (lin // WARP).astype(np.uint32)
        self.nwarps = (T + WARP - 1) // WARP
        self.alive = np.ones(T, dtype=bool)
        self.n_alive = T
        self.mem = mem
        self.shared_regions = shared_regions
        self.fill = fill
        self.program = launch.program
        self.stack_top = {"local": 0, "param": 0}
        self.cp_async = []  # pending cp.async copies (see ops_async)
        self.cp_groups = np.zeros(T, dtype=np.int64)  # committed groups per thread
        self.steps = 0
        self.thread_steps = 0
        self._sreg_cache: dict[str, np.ndarray] = {}
        self.thread_rank = None  # thread-serial schedules: each thread's turn (see engine._start)

    def tid_of(self, t: int) -> tuple[int, int, int]:
        return int(self.tid[0][t]), int(self.tid[1][t]), int(self.tid[2][t])

    @property
    def clock(self) -> int:
        """A monotone counter standing in for ``%clock``: executed steps of the
        whole launch so far (deterministic, unlike the hardware's)."""
        return self.launch.steps_before + self.steps

    def sreg(self, name: str) -> np.ndarray:
        """A special register's value for every thread (uint32 or uint64)."""
        if name in ("%clock", "%clock_hi", "%clock64", "%globaltimer", "%globaltimer_lo",
                    "%globaltimer_hi"):
            c = self.clock
            if name == "%clock64" or name == "%globaltimer":
                return np.full(self.T, c, dtype=np.uint64)
            if name in ("%clock_hi", "%globaltimer_hi"):
                c >>= 32
            return np.full(self.T, c & 0xFFFFFFFF, dtype=np.uint32)
        v = self._sreg_cache.get(name)
        if v is None:
            v = self._sreg_cache[name] = self._compute_sreg(name)
        return v

    def _compute_sreg(self, name: str) -> np.ndarray:
        T = self.T
        base, _, comp = name.partition(".")
        dim = "xyz".find(comp) if comp else -1
        u32 = np.uint32

        def full(v):
            return np.full(T, v, dtype=u32)

        if base == "%tid" and dim >= 0:
            return self.tid[dim]
        if base == "%ntid" and dim >= 0:
            return full(self.ntid[dim])
        if base == "%ctaid" and dim >= 0:
            return full(self.ctaid[dim])
        if base == "%nctaid" and dim >= 0:
            return full(self.nctaid[dim])
        if name == "%laneid":
            return self.laneid
        if name == "%warpid":
            return self.warpid
        if name == "%nwarpid":
            return full(self.nwarps)
        if name in ("%smid", "%gridid"):
            return full(0)
        if name == "%nsmid":
            return full(1)
        if name.startswith("%lanemask_"):
            lane = self.laneid.astype(np.uint64)
            one = np.uint64(1)
            rel = name[len("%lanemask_"):]
            bit = one << lane
            below = bit - one
            m = {"eq": bit, "lt": below, "le": below | bit, "gt": ~(below | bit), "ge": ~below}[rel]
            return (m & np.uint64(0xFFFFFFFF)).astype(u32)
        if name in ("%dynamic_smem_size",):
            return full(self.launch.shared_bytes)
        if name in ("%total_smem_size", "%aggr_smem_size"):
            return full(self.launch.total_shared)
        if name.startswith("%envreg"):
            return full(0)
        if name == "%is_explicit_cluster":
            return full(0)
        raise KeyError(name)


class Frame:
    """One activation of a function: its registers (one array per slot), the
    addresses of its frame-scoped ``.local``/``.param`` variables, and the
    regions to free when it returns."""

    __slots__ = ("r", "cta", "fn", "sym", "regions")

    def __init__(self, fn, cta: CTA):
        self.fn = fn
        self.cta = cta
        T = cta.T
        self.r = [np.zeros(T, dtype=dt) for dt in fn.slot_dtypes]
        self.sym: dict[str, int] = {}
        self.regions = []


def full_warps_check(cta, idx: np.ndarray) -> np.ndarray | None:
    """Lanes of the warps touched by ``idx`` that are alive but not in ``idx``
    (for ``.aligned`` collectives that need the whole warp)."""
    n = len(idx)
    if n and n % WARP == 0:
        lo = int(idx.min())
        if lo % WARP == 0 and int(idx.max()) - lo == n - 1:
            return idx[:0]  # n distinct threads filling [lo, lo + n): whole warps, in any order, no lane missing
    T = cta.T
    nw = -(-T // WARP)
    present = np.zeros(nw * WARP, dtype=bool)
    present[idx] = True
    touched = np.repeat(present.reshape(nw, WARP).any(axis=1), WARP)[:T]  # lanes of the warps idx touches
    return np.flatnonzero(touched & cta.alive & ~present[:T])  # ascending, as the lanes are


def not_in(threads: np.ndarray, idx: np.ndarray, T: int) -> np.ndarray:
    """The elements of ``threads`` (thread indices below ``T``) not in ``idx``,
    in their order: ``np.setdiff1d(threads, idx, assume_unique=True)`` for
    ascending unique ``threads``, by one mask over the CTA instead of a sort
    (collectives ask this at every step of a divergent warp)."""
    present = np.zeros(T, dtype=bool)
    present[idx] = True
    return threads[~present[threads]]
