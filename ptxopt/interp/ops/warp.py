"""Warp-level collectives: shfl.sync vote.sync activemask match.sync
redux.sync elect.sync bar.warp.sync.

These are COLLECTIVE steps: the engine first asks :func:`members_missing`
whether every non-exited lane named by the membermask is in the executing
group (if not, the group parks until they arrive, see
:mod:`ptxopt.interp.engine`), then ``run`` computes the result for all the
group's warps at once. A lane reading from a lane outside the group (which
PTX leaves undefined) reads that lane's register as it stands, which is
deterministic. A lane whose membermask does not name the lane itself (also
undefined in PTX: ``shfl.sync`` with mask 0) raises :class:`WarpSyncError`.
"""

from __future__ import annotations

import numpy as np

from ptxopt.interp.step import COLLECTIVE, Step
from ptxopt.interp.errors import WarpSyncError, describe
from ptxopt.interp.ops.op_helpers import one_type
from ptxopt.interp.cta_state import ALL, WARP, full_warps_check, not_in
from ptxopt.ptx.ir import Pair

U32 = np.uint32


def members_missing(mask_reader, ins=None):
    """``aux(frame, sel, idx) -> missing threads`` for a membermask operand."""
    where = f"{describe(ins)}: " if ins is not None else ""

    def aux(fr, sel, idx):
        cta = fr.cta
        raw = mask_reader(fr, sel)
        # an immediate reads as a one-element array: one mask for every lane
        if np.size(raw) == 1 and int(np.ravel(raw)[0]) & 0xFFFFFFFF == 0xFFFFFFFF:
            if sel is ALL and cta.n_alive == cta.T:
                return None  # every lane named, every lane here
            return full_warps_check(cta, idx)  # every lane named: the live lanes of the touched warps
        m = np.broadcast_to(raw, (len(idx),)).astype(np.uint64)
        own = ((m >> (idx % WARP).astype(np.uint64)) & np.uint64(1)).astype(bool)
        if not own.all():
            t = idx[~own][0]
            raise WarpSyncError(f"{where}thread tid={cta.tid_of(int(t))} executes a warp collective whose membermask "
                                f"({int(m[~own][0]):#010x}) does not name its own lane (undefined in PTX)")
        warps = idx // WARP
        uw, inv = np.unique(warps, return_inverse=True)
        wm = np.zeros(len(uw), dtype=np.uint64)
        np.bitwise_or.at(wm, inv, m)
        lanes = np.arange(WARP, dtype=np.uint64)
        req = ((wm[:, None] >> lanes) & np.uint64(1)).astype(bool)
        threads = uw[:, None] * WARP + np.arange(WARP)
        req &= threads < cta.T
        need = threads[req]
        need = need[cta.alive[need]]
        return not_in(need, idx, cta.T)

    return aux


def warp_segments(idx: np.ndarray):
    """(warp index per thread, inverse into unique warps, number of warps)."""
    warps = idx // WARP
    uw, inv = np.unique(warps, return_inverse=True)
    return uw, inv


def _idx(fr, sel):
    return fr.cta.all_idx if sel is ALL else sel


def _collective(run, mask_reader, ins=None):
    return Step(COLLECTIVE, run, ins, aux=members_missing(mask_reader, ins))


# --------------------------------------------------------------------------


def c_shfl(ins, d):
    types = d.mods({"sync", "up", "down", "bfly", "idx"})
    one_type(d, types)
    if "sync" not in ins.modifiers:
        raise d.unsupported("shfl without .sync (removed on sm_70+)")
    mode = [m for m in ins.modifiers if m in ("up", "down", "bfly", "idx")]
    if len(mode) != 1 or len(ins.operands) != 5:
        raise d.unsupported()
    mode = mode[0]
    dst, a, b, c, mask = ins.operands
    if type(dst) is Pair:
        wd, wp = d.write(dst.first, "b32"), d.write(dst.second, "pred")
    else:
        wd, wp = d.write(dst, "b32"), None
    ra, rb, rc = d.read(a, "b32"), d.read(b, "b32"), d.read(c, "b32")
    rm = d.read(mask, "b32")

    def run(fr, sel):
        idx = _idx(fr, sel)
        T = fr.cta.T
        lane = (idx % WARP).astype(np.int64)
        base = idx - lane
        bv = rb(fr, sel).astype(np.int64)
        cv = rc(fr, sel).astype(np.int64)
        bval = bv & 31
        cval = cv & 31
        seg = (cv >> 8) & 31
        max_lane = (lane & seg) | (cval & ~seg)
        min_lane = lane & seg
        if mode == "up":
            j = lane - bval
            ok = j >= max_lane
        elif mode == "down":
            j = lane + bval
            ok = j <= max_lane
        elif mode == "bfly":
            j = lane ^ bval
            ok = j <= max_lane
        else:
            j = min_lane | (bval & ~seg)
            ok = j <= max_lane
        j = np.where(ok, j, lane)
        src = base + j
        src = np.where(src < T, src, idx)
        full = np.broadcast_to(ra(fr, ALL), (T,))
        wd(fr, sel, full[src])
        if wp is not None:
            wp(fr, sel, np.broadcast_to(ok, (len(idx),)))

    return _collective(run, rm, ins)


def _lane_bits(idx):
    return np.uint64(1) << (idx % WARP).astype(np.uint64)


def _in_mask(idx, m):
    return ((np.broadcast_to(m, (len(idx),)).astype(np.uint64) >> (idx % WARP).astype(np.uint64))
            & np.uint64(1)).astype(bool)


def _warp_or(idx, vals_u64, uw=None, inv=None):
    if uw is None:
        uw, inv = warp_segments(idx)
    acc = np.zeros(len(uw), dtype=np.uint64)
    np.bitwise_or.at(acc, inv, vals_u64)
    return acc[inv]


def c_vote(ins, d):
    types = d.mods({"sync", "all", "any", "uni", "ballot"})
    if "sync" not in ins.modifiers:
        raise d.unsupported("vote without .sync")
    mode = [m for m in ins.modifiers if m in ("all", "any", "uni", "ballot")]
    if len(mode) != 1 or len(ins.operands) != 3:
        raise d.unsupported()
    mode = mode[0]
    t = one_type(d, types)
    dst, a, mask = ins.operands
    ra = d.pred(a)
    rm = d.read(mask, "b32")
    w = d.write(dst, "b32" if mode == "ballot" else "pred")
    if (mode == "ballot") != (t == "b32"):
        raise d.unsupported(f"vote.{mode}.{t}")

    def run(fr, sel):
        idx = _idx(fr, sel)
        n = len(idx)
        p = np.broadcast_to(ra(fr, sel), (n,))
        part = _in_mask(idx, rm(fr, sel))
        bits = _lane_bits(idx)
        yes = _warp_or(idx, np.where(p & part, bits, np.uint64(0)))
        if mode == "ballot":
            w(fr, sel, (yes & np.uint64(0xFFFFFFFF)).astype(U32))
            return
        members = _warp_or(idx, np.where(part, bits, np.uint64(0)))
        if mode == "all":
            w(fr, sel, yes == members)
        elif mode == "any":
            w(fr, sel, yes != 0)
        else:
            w(fr, sel, (yes == members) | (yes == 0))

    return _collective(run, rm, ins)


def c_activemask(ins, d):
    one_type(d, d.mods(set()))
    w = d.write(ins.operands[0], "b32")

    def run(fr, sel):
        idx = _idx(fr, sel)
        w(fr, sel, (_warp_or(idx, _lane_bits(idx)) & np.uint64(0xFFFFFFFF)).astype(U32))

    return run


def c_match(ins, d):
    types = d.mods({"sync", "any", "all"})
    t = one_type(d, types)
    mode = "all" if "all" in ins.modifiers else "any"
    dst, a, mask = ins.operands
    if type(dst) is Pair:
        wd, wp = d.write(dst.first, "b32"), d.write(dst.second, "pred")
    else:
        wd, wp = d.write(dst, "b32"), None
    ra = d.read(a, t)
    rm = d.read(mask, "b32")

    def run(fr, sel):
        idx = _idx(fr, sel)
        n = len(idx)
        v = np.broadcast_to(ra(fr, sel), (n,))
        part = _in_mask(idx, rm(fr, sel))
        warps = idx // WARP
        same = (warps[:, None] == warps[None, :]) & (v[:, None] == v[None, :]) & part[None, :]
        bits = _lane_bits(idx)
        eq = np.bitwise_or.reduce(np.where(same, bits[None, :], np.uint64(0)), axis=1)
        members = _warp_or(idx, np.where(part, bits, np.uint64(0)))
        if mode == "any":
            wd(fr, sel, (eq & np.uint64(0xFFFFFFFF)).astype(U32))
            return
        allsame = eq == members
        wd(fr, sel, np.where(allsame, members, np.uint64(0)).astype(U32))
        if wp is not None:
            wp(fr, sel, allsame)

    return _collective(run, rm, ins)


REDUX = {"add", "min", "max", "and", "or", "xor"}


def c_redux(ins, d):
    types = d.mods({"sync"} | REDUX)
    t = one_type(d, types)
    op = [m for m in ins.modifiers if m in REDUX]
    if len(op) != 1 or t not in ("u32", "s32", "b32"):
        raise d.unsupported()
    op = op[0]
    dst, a, mask = ins.operands
    w = d.write(dst, t)
    ra = d.read(a, t)
    rm = d.read(mask, "b32")

    def run(fr, sel):
        idx = _idx(fr, sel)
        n = len(idx)
        v = np.broadcast_to(ra(fr, sel), (n,))
        part = _in_mask(idx, rm(fr, sel))
        uw, inv = warp_segments(idx)
        out = np.zeros(n, dtype=v.dtype)
        for k in range(len(uw)):
            m = (inv == k)
            vals = v[m & part]
            if op == "add":
                r = vals.sum(dtype=v.dtype) if len(vals) else v.dtype.type(0)
            elif op in ("min", "max"):
                r = (vals.min() if op == "min" else vals.max()) if len(vals) else v.dtype.type(0)
            else:
                f = {"and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}[op]
                r = f.reduce(vals) if len(vals) else v.dtype.type(0)
            out[m] = r
        w(fr, sel, out)

    return _collective(run, rm, ins)


def c_elect(ins, d):
    d.mods({"sync"})
    dst, mask = ins.operands
    if type(dst) is Pair:
        wd, wp = d.write(dst.first, "b32"), d.write(dst.second, "pred")
    else:
        wd, wp = d.write(dst, "b32"), None
    rm = d.read(mask, "b32")

    def run(fr, sel):
        idx = _idx(fr, sel)
        part = _in_mask(idx, rm(fr, sel))
        lane = (idx % WARP).astype(np.int64)
        uw, inv = warp_segments(idx)
        best = np.full(len(uw), WARP, dtype=np.int64)
        np.minimum.at(best, inv, np.where(part, lane, WARP))
        leader = best[inv]
        wd(fr, sel, (leader & 31).astype(U32))
        if wp is not None:
            wp(fr, sel, lane == leader)

    return _collective(run, rm, ins)


def c_bar_warp(ins, d):
    """``bar.warp.sync membermask``: only a rendezvous."""
    rm = d.read(ins.operands[0], "b32")
    return _collective(lambda fr, sel: None, rm, ins)


OPS = {
    "shfl": c_shfl,
    "vote": c_vote,
    "activemask": c_activemask,
    "match": c_match,
    "redux": c_redux,
    "elect": c_elect,
}
