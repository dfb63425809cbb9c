"""The lanes a warp collective waits for, computed by one mask over the CTA
(:func:`ptxopt.interp.cta_state.full_warps_check`, the membermask check of
:func:`ptxopt.interp.ops.warp.members_missing`), agree with the
definition by sets (``np.setdiff1d`` of the named live lanes and the
executing ones) on random CTAs: sizes that end in a partial warp, exited
threads, executing groups in any order, full and partial membermasks."""

import random

import numpy as np
import pytest

from ptxopt.interp.errors import WarpSyncError
from ptxopt.interp.ops.warp import members_missing
from ptxopt.interp.cta_state import ALL, WARP, full_warps_check


class _CTA:
    def __init__(self, T, alive):
        self.T, self.alive, self.n_alive = T, alive, int(alive.sum())
        self.all_idx = np.arange(T)

    def tid_of(self, t):
        return (t, 0, 0)


class _Frame:
    def __init__(self, cta):
        self.cta = cta


def _by_sets(cta, idx, masks):
    """The definition: live lanes named by some executing lane's membermask (all lanes of its warp for a
    full mask), less the executing lanes."""
    need = set()
    for t, m in zip(idx.tolist(), masks):
        w = t // WARP
        need |= {w * WARP + l for l in range(WARP) if m >> l & 1 and w * WARP + l < cta.T}
    need = sorted(t for t in need if cta.alive[t])
    return np.setdiff1d(np.array(need, dtype=np.int64), idx, assume_unique=True)


def _case(rng):
    T = rng.choice([1, 5, 31, 32, 33, 64, 70, 96, 128, 200])
    alive = np.array([rng.random() > 0.15 for _ in range(T)])
    live = np.flatnonzero(alive)
    k = rng.randint(1, max(1, len(live))) if len(live) else 0
    idx = np.array(rng.sample(live.tolist(), k), dtype=np.int64)
    if T >= 64 and rng.random() < 0.3:  # whole warps, as a warp-serial schedule runs them (with a stray lane)
        w = rng.randrange(T // WARP - 1)
        idx = np.arange(w * WARP, (w + rng.choice([1, 2])) * WARP, dtype=np.int64)
        if rng.random() < 0.5:
            idx[rng.randrange(len(idx))] = min(T - 1, idx[-1] + WARP)  # one lane swapped for another warp's
        idx = np.unique(idx)
        rng.shuffle(idx)
    if rng.random() < 0.5:
        idx.sort()
    return _CTA(T, alive), idx


@pytest.mark.parametrize("seed", range(40))
def test_full_warps_check_is_the_set_difference(seed):
    rng = random.Random(seed)
    cta, idx = _case(rng)
    got = full_warps_check(cta, idx)
    want = _by_sets(cta, idx, [0xFFFFFFFF] * len(idx))
    assert got.tolist() == want.tolist()


@pytest.mark.parametrize("seed", range(40))
def test_members_missing_is_the_set_difference(seed):
    rng = random.Random(seed)
    cta, idx = _case(rng)
    full = rng.random() < 0.5
    if full:  # as the decoder reads an immediate: a one-element array (or a register: one value per lane)
        raw = rng.choice([np.array([0xFFFFFFFF], dtype=np.uint32), np.full(len(idx), 0xFFFFFFFF, dtype=np.uint32)])
        masks = [0xFFFFFFFF] * len(idx)
    else:  # a per-lane membermask naming its own lane and random others
        masks = [rng.getrandbits(32) | (1 << (t % WARP)) for t in idx.tolist()]
        raw = np.array(masks, dtype=np.uint32)
    got = members_missing(lambda fr, s: raw)(_Frame(cta), idx, idx)
    want = _by_sets(cta, idx, masks)
    assert got.tolist() == want.tolist()


def test_every_lane_here_and_named_waits_for_nothing():
    cta = _CTA(64, np.ones(64, dtype=bool))
    assert members_missing(lambda fr, s: np.array([0xFFFFFFFF], dtype=np.uint32))(_Frame(cta), ALL, cta.all_idx) is None


def test_a_membermask_without_the_own_lane_is_refused():
    cta = _CTA(32, np.ones(32, dtype=bool))
    idx = np.arange(4)
    with pytest.raises(WarpSyncError):
        members_missing(lambda fr, s: np.uint32(0b1110))(_Frame(cta), idx, idx)


def test_a_group_whole_only_at_its_ends_is_not_whole():
    """32 threads that start at a warp's first lane and end at its last, in execution order, yet lane 1 is
    in another warp: the whole-warp shortcut must read the set, not the ends of the list."""
    cta = _CTA(64, np.ones(64, dtype=bool))
    idx = np.array([0, 40, *range(2, 31), 31], dtype=np.int64)
    assert len(idx) == WARP
    assert full_warps_check(cta, idx).tolist() == _by_sets(cta, idx, [0xFFFFFFFF] * len(idx)).tolist()
