"""Tensor-core data movement and arithmetic: ldmatrix, stmatrix, mma.sync.

These are ``.sync.aligned`` warp collectives: every lane of each warp takes
part (the engine checks the whole warp is present). Fragment layouts follow
the PTX ISA figures for ``ldmatrix .m8n8`` and ``mma .m16n8k8/.m16n8k16``
(f16/bf16 inputs, f32 or f16 accumulators) and ``mma .m16n8k8/.m16n8k4``
with ``.tf32`` inputs (f32 accumulators; Triton's fp32 ``tl.dot``), with
``groupID = lane >> 2`` and ``threadID_in_group = lane & 3``. A ``.tf32``
input is an f32 register whose low 13 mantissa bits are ignored (cleared).

Arithmetic model of ``mma`` (approximate, documented): the GPU's tensor
cores do not specify their internal rounding. Here every product is exact
(float64), the products are added to the accumulator in float64 in ``k``
order, and the sum is rounded once to the accumulator type. It is
deterministic, so original and transformed kernels agree exactly, and close
to IEEE, so results can be checked against numpy.
"""

from __future__ import annotations

import numpy as np

from ptxopt.ptx import opcodes
from ptxopt.interp import fp
from ptxopt.interp.cta_state import full_warps_check
from ptxopt.interp.step import COLLECTIVE, Step
from ptxopt.interp.ops.op_helpers import pack16, split16
from ptxopt.interp.cta_state import ALL, WARP
from ptxopt.ptx.ir import Vec

LANE = np.arange(WARP)
GID = LANE >> 2
TIG = LANE & 3


def _whole_warps(fr, sel, idx):
    if sel is ALL and fr.cta.n_alive == fr.cta.T and fr.cta.T % WARP == 0:
        return None
    missing = full_warps_check(fr.cta, idx)
    if len(missing) == 0 and np.any((idx // WARP + 1) * WARP > fr.cta.T):
        # a partial last warp cannot run an .aligned collective
        return np.array([fr.cta.T], dtype=np.intp)
    return missing


def _warps(idx):
    """(unique warps, position of each thread's warp, lane of each thread)."""
    uw, inv = np.unique(idx // WARP, return_inverse=True)
    return uw, inv, idx % WARP


_MATRIX_MODS = frozenset({"sync", "aligned", "m8n8", "x1", "x2", "x4", "trans", "shared", "shared::cta"})


def _matrix_operands(ins, d, regs, mem):
    """What ldmatrix and stmatrix share: the .m8n8 .b16 shape check, the
    matrix count (.x1/.x2/.x4), .trans, the register operands (one b32 per
    matrix) and the shared-memory address reader."""
    mods = ins.modifiers
    if d.mods(_MATRIX_MODS) != ["b16"] or "m8n8" not in mods:
        raise d.unsupported(f"{ins.opcode} shape/type")
    num = 4 if "x4" in mods else 2 if "x2" in mods else 1
    items = list(regs.items) if type(regs) is Vec else [regs]
    if len(items) != num:
        raise d.unsupported("register count")
    space = opcodes.mem_space(ins)
    return num, "trans" in mods, items, space, d.addr(mem, space)


def c_ldmatrix(ins, d):
    dst, src = ins.operands
    num, trans, items, space, ga = _matrix_operands(ins, d, dst, src)
    ws = [d.write(o, "b32") for o in items]
    ins_ = ins

    def run(fr, sel):
        cta = fr.cta
        idx = cta.all_idx if sel is ALL else sel
        n = len(idx)
        uw, inv, lane = _warps(idx)
        addr = np.broadcast_to(ga(fr, sel), (n,))
        use = lane < 8 * num
        rows = cta.mem.load(np.ascontiguousarray(addr[use]), 2, 8, space, (ins_, cta), idx[use])
        M = np.zeros((len(uw), num, 8, 8), dtype=np.uint16)
        lu = lane[use]
        M[inv[use], lu // 8, lu % 8, :] = np.stack(rows, axis=1)
        g, t = lane // 4, lane % 4
        for i, w in enumerate(ws):
            if trans:
                lo, hi = M[inv, i, 2 * t, g], M[inv, i, 2 * t + 1, g]
            else:
                lo, hi = M[inv, i, g, 2 * t], M[inv, i, g, 2 * t + 1]
            w(fr, sel, pack16(lo, hi))

    return Step(COLLECTIVE, run, aux=_whole_warps)


def c_stmatrix(ins, d):
    dst, src = ins.operands
    num, trans, items, space, ga = _matrix_operands(ins, d, src, dst)
    rs = [d.read(o, "b32") for o in items]
    ins_ = ins

    def run(fr, sel):
        cta = fr.cta
        idx = cta.all_idx if sel is ALL else sel
        n = len(idx)
        uw, inv, lane = _warps(idx)
        M = np.zeros((len(uw), num, 8, 8), dtype=np.uint16)
        g, t = lane // 4, lane % 4
        for i, r in enumerate(rs):
            lo, hi = split16(np.broadcast_to(r(fr, sel), (n,)))
            if trans:
                M[inv, i, 2 * t, g], M[inv, i, 2 * t + 1, g] = lo, hi
            else:
                M[inv, i, g, 2 * t], M[inv, i, g, 2 * t + 1] = lo, hi
        addr = np.broadcast_to(ga(fr, sel), (n,))
        use = lane < 8 * num
        lu = lane[use]
        rows = M[inv[use], lu // 8, lu % 8, :]
        cta.mem.store(np.ascontiguousarray(addr[use]), 2, [rows[:, k] for k in range(8)], space,
                      (ins_, cta), idx[use])

    return Step(COLLECTIVE, run, aux=_whole_warps)


# --------------------------------------------------------------------------
# mma
# --------------------------------------------------------------------------


def _a_coords(k: int):
    """(row, col) of A element i held by each lane, shape (32, n)."""
    n = k // 2  # values per lane: 4 for k8, 8 for k16
    i = np.arange(n)
    row = GID[:, None] + 8 * ((i[None, :] >> 1) & 1)
    col = 2 * TIG[:, None] + (i[None, :] & 1) + 8 * (i[None, :] >> 2)
    return row, col


def _b_coords(k: int):
    n = k // 4  # 2 for k8, 4 for k16
    i = np.arange(n)
    row = 2 * TIG[:, None] + (i[None, :] & 1) + 8 * (i[None, :] >> 1)
    col = np.broadcast_to(GID[:, None], row.shape)
    return row, col


def _c_coords():
    i = np.arange(4)
    row = GID[:, None] + 8 * (i[None, :] >> 1)
    col = 2 * TIG[:, None] + (i[None, :] & 1)
    return row, col


def _tf32_a_coords(k: int):
    """A (16 x k, .tf32, one value per register): a0 (g, t), a1 (g+8, t),
    a2 (g, t+4), a3 (g+8, t+4); .m16n8k4 has a0, a1."""
    n = k // 2
    i = np.arange(n)
    row = GID[:, None] + 8 * (i[None, :] & 1)
    col = TIG[:, None] + 4 * (i[None, :] >> 1)
    return row, col


def _tf32_b_coords(k: int):
    """B (k x 8): b0 (t, g), b1 (t+4, g)."""
    n = k // 4
    i = np.arange(n)
    row = TIG[:, None] + 4 * i[None, :]
    col = np.broadcast_to(GID[:, None], row.shape)
    return row, col


TF32_MASK = np.uint32(0xFFFFE000)


def c_mma(ins, d):
    mods = ins.modifiers
    types = d.mods({"sync", "aligned", "row", "col", "m16n8k16", "m16n8k8", "m16n8k4"})
    if len(types) == 4 and types[1] == types[2] == "tf32":
        return _c_mma_tf32(ins, d, types)
    if "m16n8k16" in mods:
        k = 16
    elif "m16n8k8" in mods:
        k = 8
    else:
        raise d.unsupported("mma shape")
    if not ("row" in mods and "col" in mods and mods.index("row") < mods.index("col")):
        raise d.unsupported("mma layout other than .row.col")
    if len(types) != 4:
        raise d.unsupported("mma types")
    dt, at, bt, ct = types
    if at != bt or at not in ("f16", "bf16") or dt not in ("f32", "f16") or ct not in ("f32", "f16"):
        raise d.unsupported(f"mma .{dt}.{at}.{bt}.{ct}")
    D, A, B, C = ins.operands
    nacc = 4 if dt == "f32" else 2
    want = (nacc, k // 4, k // 8, 4 if ct == "f32" else 2)
    got = tuple(len(x.items) if type(x) is Vec else 1 for x in (D, A, B, C))
    if got != want:
        raise d.unsupported(f"mma fragment sizes {got}, expected {want}")
    wd = [d.write(o, "b32") for o in D.items]
    ra = [d.read(o, "b32") for o in A.items]
    rb = [d.read(o, "b32") for o in B.items]
    rc = [d.read(o, "b32") for o in C.items]
    arow, acol = _a_coords(k)
    brow, bcol = _b_coords(k)
    crow, ccol = _c_coords()

    def halves(regs, fr, sel, n):
        out = []
        for r in regs:
            lo, hi = split16(np.broadcast_to(r(fr, sel), (n,)))
            out += [fp.from_bits16(lo, at), fp.from_bits16(hi, at)]
        return np.stack(out, axis=1)  # (n, values)

    def acc_vals(fr, sel, n):
        if ct == "f32":
            return np.stack([np.broadcast_to(r(fr, sel), (n,)).view(np.float32).astype(np.float64)
                             for r in rc], axis=1)
        out = []
        for r in rc:
            lo, hi = split16(np.broadcast_to(r(fr, sel), (n,)))
            out += [fp.from_bits16(lo, "f16"), fp.from_bits16(hi, "f16")]
        return np.stack(out, axis=1)

    def run(fr, sel):
        n = len(fr.cta.all_idx if sel is ALL else sel)
        res = _mma_16x8(fr, sel, k, (halves(ra, fr, sel, n), arow, acol),
                        (halves(rb, fr, sel, n), brow, bcol), (acc_vals(fr, sel, n), crow, ccol))
        if dt == "f32":
            out = fp.to_format(res.ravel(), "f32").reshape(res.shape).view(np.uint32)
            for i, w in enumerate(wd):
                w(fr, sel, np.ascontiguousarray(out[:, i]))
        else:
            h = fp.to_bits16(res.ravel(), "f16").reshape(res.shape)
            for i, w in enumerate(wd):
                w(fr, sel, pack16(h[:, 2 * i], h[:, 2 * i + 1]))

    return Step(COLLECTIVE, run, aux=_whole_warps)


def _mma_16x8(fr, sel, k, a, b, c):
    """One m16n8kK tile per warp: scatter each lane's fragment values
    (``(values, rows, cols)`` per operand, rows/cols indexed by lane) into
    the warp's A (16 x k), B (k x 8) and C (16 x 8), accumulate the exact
    products in float64, and gather the result back per lane (n, 4)."""
    idx = fr.cta.all_idx if sel is ALL else sel
    uw, inv, lane = _warps(idx)
    W = len(uw)
    mats = [np.zeros((W, 16, k)), np.zeros((W, k, 8)), np.zeros((W, 16, 8))]
    for m, (v, rows, cols) in zip(mats, (a, b, c)):
        m[inv[:, None], rows[lane], cols[lane]] = v
    Am, Bm, acc = mats
    with np.errstate(all="ignore"):
        for kk in range(k):
            acc = acc + Am[:, :, kk, None] * Bm[:, None, kk, :]
    _, crow, ccol = c
    return acc[inv[:, None], crow[lane], ccol[lane]]


def _c_mma_tf32(ins, d, types):
    """``mma.sync.aligned.m16n8k8/.m16n8k4.row.col.f32.tf32.tf32.f32``: the
    same arithmetic model as the f16 forms (exact products of the truncated
    inputs, summed with the accumulator in float64, rounded once to f32)."""
    mods = ins.modifiers
    if "m16n8k8" in mods:
        k = 8
    elif "m16n8k4" in mods:
        k = 4
    else:
        raise d.unsupported("mma .tf32 shape (m16n8k8 and m16n8k4 are implemented)")
    if not ("row" in mods and "col" in mods and mods.index("row") < mods.index("col")):
        raise d.unsupported("mma layout other than .row.col")
    dt, _, _, ct = types
    if dt != "f32" or ct != "f32":
        raise d.unsupported(f"mma .{dt}.tf32.tf32.{ct}")
    if len(ins.operands) != 4:
        raise d.unsupported("mma operand count")
    D, A, B, C = ins.operands
    want = (4, k // 2, k // 4, 4)
    got = tuple(len(x.items) if type(x) is Vec else 1 for x in (D, A, B, C))
    if got != want:
        raise d.unsupported(f"mma fragment sizes {got}, expected {want}")
    wd = [d.write(o, "b32") for o in D.items]
    ra = [d.read(o, "b32") for o in (A.items if type(A) is Vec else [A])]
    rb = [d.read(o, "b32") for o in (B.items if type(B) is Vec else [B])]
    rc = [d.read(o, "b32") for o in C.items]
    arow, acol = _tf32_a_coords(k)
    brow, bcol = _tf32_b_coords(k)
    crow, ccol = _c_coords()

    def vals(regs, fr, sel, n, mask):
        return np.stack([(np.broadcast_to(r(fr, sel), (n,)).view(np.uint32) & mask).view(np.float32)
                         .astype(np.float64) for r in regs], axis=1)

    def run(fr, sel):
        n = len(fr.cta.all_idx if sel is ALL else sel)
        res = _mma_16x8(fr, sel, k, (vals(ra, fr, sel, n, TF32_MASK), arow, acol),
                        (vals(rb, fr, sel, n, TF32_MASK), brow, bcol),
                        (vals(rc, fr, sel, n, np.uint32(0xFFFFFFFF)), crow, ccol))
        out = fp.to_format(res.ravel(), "f32").reshape(res.shape).view(np.uint32)
        for i, w in enumerate(wd):
            w(fr, sel, np.ascontiguousarray(out[:, i]))

    return Step(COLLECTIVE, run, aux=_whole_warps)


OPS = {"ldmatrix": c_ldmatrix, "stmatrix": c_stmatrix, "mma": c_mma}
