#!/usr/bin/env python3
"""Generate the parametric kernel families of the corpus (issue 30).

A learned policy needs many structurally different kernels, and held-out
evaluation needs them grouped by the template they come from (a policy that
saw softmax has seen layernorm's shape too). This script draws, per family,
``--per-family`` variants of one Triton template in ``families/templates.py``:
block shapes, warps and pipeline stages, dtypes, fused operations and
unrolling (constexprs), and the runtime sizes that set the trip counts of
the template's ``range`` loops; it compiles each with Triton for sm_89 (no
GPU needed) and writes ``families/FAMILY/NAME.ptx`` and its manifest entry:
the small *check* launch the interpreter runs, the *performance* launch of
a realistic problem, the template ``group``, and ``loops`` (each runtime
loop's bound argument, step, and trip counts at both launches).

It is seeded and reproducible: a family's variants depend only on
``--seed``, the family name and ``--per-family`` (string-seeded
``random.Random``), and the PTX only on the Triton version, which the
manifest's ``generator`` field records (``triton 3.9.0 ...``). The CUDA C
families of ``gen_cuda_families.py`` (nvcc) are built after these, with the
same seed and count. ``families/GENERATION.json`` records seed, count and
versions (Triton's and nvcc's).

Usage (through ``regenerate.py``, which owns the manifest)::

    python corpus/regenerate.py families            # default seed 30, 16 per family
    python corpus/gen_families.py --per-family 4    # same, other count (the manifest keeps other parts)
"""

from __future__ import annotations

import json
import math
import random
import sys
from pathlib import Path

CORPUS = Path(__file__).resolve().parent
FAMILIES_DIR = CORPUS / "families"
TEMPLATES = FAMILIES_DIR / "templates.py"
DEFAULT_SEED = 30
DEFAULT_PER_FAMILY = 16

# performance problem sizes (see corpus/README.md, "Performance launches")
N_1D = 1 << 24
MIN_PERF_THREADS = 1 << 16  # a performance launch fills a GPU (tests/kernels/test_corpus.py checks it)
ROWS, COLS = 4096, 4096


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _pow2(lo: int, hi: int, rng: random.Random) -> int:
    return 1 << rng.randint(lo.bit_length() - 1, hi.bit_length() - 1)


def _not16(v: int) -> int:
    """A ragged size: nudge multiples of 16 off by a few, so check sizes
    exercise the masked tails (and keep no 16-divisibility hint)."""
    return v - 3 if v % 16 == 0 else v


def _warps(elems: int, rng: random.Random) -> int:
    """Warps for a program of *elems* elements: 1 to 8, at most one thread per element."""
    top = max(1, min(8, elems // 32))
    return _pow2(1, top, rng)


def _loop(bound: str, step, check: int, perf: int, loops: int = 1) -> dict:
    """One runtime loop of the template: its bound argument, step, how many
    such loops the template has, and trip counts at the check and performance launches."""
    step_n = step if isinstance(step, int) else 1
    return {"bound": bound, "step": step, "loops": loops,
            "trips_check": _cdiv(check, step_n), "trips_performance": _cdiv(perf, step_n)}


def _buf(arg, role, dtype, count, **extra):
    return (arg, role, dtype, count, extra) if extra else (arg, role, dtype, count)


# --------------------------------------------------------------------------
# one sampler per family: rng -> (constexprs, num_warps, num_stages, grid, params,
# performance, shape, tags, loops, variant)


def s_ew_chain(rng):
    dt = rng.choice(["f32", "f16"])
    block = _pow2(64, 1024, rng)
    iters = rng.randint(2, 3)
    use_y = rng.random() < 0.5
    ops = [rng.randrange(8) for _ in range(3)]
    grid = 2
    n = _not16(grid * iters * block - rng.randint(0, block // 2))
    p_iters = rng.choice([1, 2, 4, 8])
    pn = N_1D
    c = dict(BLOCK=block, USE_Y=int(use_y), OP1=ops[0], OP2=ops[1], OP3=ops[2])
    return dict(
        constexprs=c, num_warps=_warps(block, rng), grid=(grid, 1, 1),
        params=[_buf("x_ptr", "input", dt, n), _buf("y_ptr", "input", dt, n), _buf("out_ptr", "output", dt, n),
                ("n", "scalar", "s32", n), ("iters", "scalar", "s32", iters),
                ("a", "scalar", "f32", round(rng.uniform(0.25, 1.5), 3))],
        performance=dict(grid=(_cdiv(pn, p_iters * block), 1, 1), scalars={"n": pn, "iters": p_iters, "a": 0.5},
                         counts={"x_ptr": pn, "y_ptr": pn, "out_ptr": pn},
                         problem=f"2^24 {dt} elements, {p_iters} block(s) of {block} per program"),
        shape={"n": n}, tags=["fused-chain"] + (["fp16"] if dt == "f16" else []),
        loops=[_loop("iters", 1, iters, p_iters)], variant={"dtype": dt, "ops": ops, "use_y": use_y})


def _row_common(rng, looped_p=0.5):
    dt = rng.choice(["f32", "f16"])
    looped = rng.random() < looped_p
    rows = rng.randint(2, 4)
    if looped:
        block = _pow2(32, 256, rng)
        trips = rng.randint(2, 4)
        cols = _not16(block * trips - rng.randint(0, block - 1))
        p_cols = COLS
    else:
        cols = rng.randint(17, 1000)
        block = 1 << (cols - 1).bit_length()
        p_cols = block
    return dt, looped, rows, block, cols, p_cols


def _row_perf(block, p_cols, extra_counts, dt):
    return dict(grid=(ROWS, 1, 1), counts=extra_counts,
                problem=f"{ROWS} rows x {p_cols} cols {dt}, one row per program, BLOCK={block}")


def s_softmax_rows(rng):
    dt, looped, rows, block, cols, p_cols = _row_common(rng)
    n, pn = rows * cols, ROWS * p_cols
    perf = _row_perf(block, p_cols, {"x_ptr": pn, "y_ptr": pn}, dt)
    perf["scalars"] = {"stride": p_cols, "cols": p_cols}
    return dict(
        constexprs=dict(BLOCK=block, LOOPED=int(looped)), num_warps=_warps(block, rng), grid=(rows, 1, 1),
        params=[_buf("x_ptr", "input", dt, n), _buf("y_ptr", "output", dt, n),
                ("stride", "scalar", "s32", cols), ("cols", "scalar", "s32", cols)],
        performance=perf, shape={"rows": rows, "cols": cols}, tags=["row-reduction"],
        loops=[_loop("cols", block, cols, p_cols, loops=3)] if looped else [],
        variant={"dtype": dt, "looped": looped})


def s_layernorm_rows(rng):
    dt, looped, rows, block, cols, p_cols = _row_common(rng)
    affine = rng.random() < 0.6
    n, pn = rows * cols, ROWS * p_cols
    perf = _row_perf(block, p_cols, {"x_ptr": pn, "w_ptr": p_cols, "b_ptr": p_cols, "y_ptr": pn}, dt)
    perf["scalars"] = {"stride": p_cols, "cols": p_cols, "eps": 1e-5}
    return dict(
        constexprs=dict(BLOCK=block, LOOPED=int(looped), AFFINE=int(affine)), num_warps=_warps(block, rng),
        grid=(rows, 1, 1),
        params=[_buf("x_ptr", "input", dt, n), _buf("w_ptr", "input", "f32", cols), _buf("b_ptr", "input", "f32", cols),
                _buf("y_ptr", "output", dt, n), ("stride", "scalar", "s32", cols), ("cols", "scalar", "s32", cols),
                ("eps", "scalar", "f32", 1e-5)],
        performance=perf, shape={"rows": rows, "cols": cols}, tags=["row-reduction"],
        loops=[_loop("cols", block, cols, p_cols, loops=2)] if looped else [],
        variant={"dtype": dt, "looped": looped, "affine": affine})


def s_rmsnorm_rows(rng):
    dt, looped, rows, block, cols, p_cols = _row_common(rng)
    n, pn = rows * cols, ROWS * p_cols
    perf = _row_perf(block, p_cols, {"x_ptr": pn, "w_ptr": p_cols, "y_ptr": pn}, dt)
    perf["scalars"] = {"stride": p_cols, "cols": p_cols, "eps": 1e-6}
    return dict(
        constexprs=dict(BLOCK=block, LOOPED=int(looped)), num_warps=_warps(block, rng), grid=(rows, 1, 1),
        params=[_buf("x_ptr", "input", dt, n), _buf("w_ptr", "input", "f32", cols), _buf("y_ptr", "output", dt, n),
                ("stride", "scalar", "s32", cols), ("cols", "scalar", "s32", cols), ("eps", "scalar", "f32", 1e-6)],
        performance=perf, shape={"rows": rows, "cols": cols}, tags=["row-reduction"],
        loops=[_loop("cols", block, cols, p_cols, loops=2)] if looped else [],
        variant={"dtype": dt, "looped": looped})


def s_reduce_partial(rng):
    dt = rng.choice(["f32", "f16"])
    kind = rng.randrange(3)
    block = _pow2(64, 1024, rng)
    iters = rng.randint(2, 4)
    grid = rng.randint(2, 3)
    n = _not16(grid * iters * block - rng.randint(0, block // 2))
    p_iters = rng.choice([4, 8, 16, 32])
    pg = _cdiv(N_1D, p_iters * block)
    return dict(
        constexprs=dict(BLOCK=block, KIND=kind), num_warps=_warps(block, rng), grid=(grid, 1, 1),
        params=[_buf("x_ptr", "input", dt, n), _buf("part_ptr", "output", "f32", grid),
                ("n", "scalar", "s32", n), ("iters", "scalar", "s32", iters)],
        performance=dict(grid=(pg, 1, 1), scalars={"n": N_1D, "iters": p_iters},
                         counts={"x_ptr": N_1D, "part_ptr": pg},
                         problem=f"2^24 {dt} elements, {p_iters} blocks of {block} per program"),
        shape={"n": n}, tags=["reduction"], loops=[_loop("iters", 1, iters, p_iters)],
        variant={"dtype": dt, "kind": ["sum", "max", "sumsq"][kind]})


def s_scan_rows(rng):
    dt = rng.choice(["f32", "s32"])
    block = _pow2(32, 512, rng)
    rows = rng.randint(2, 3)
    trips = rng.randint(2, 4)
    cols = _not16(block * trips - rng.randint(0, block - 1))
    pn = ROWS * COLS
    return dict(
        constexprs=dict(BLOCK=block), num_warps=_warps(block, rng), grid=(rows, 1, 1),
        params=[_buf("x_ptr", "input", dt, rows * cols), _buf("y_ptr", "output", dt, rows * cols),
                ("stride", "scalar", "s32", cols), ("cols", "scalar", "s32", cols)],
        performance=dict(grid=(ROWS, 1, 1), scalars={"stride": COLS, "cols": COLS}, counts={"x_ptr": pn, "y_ptr": pn},
                         problem=f"{ROWS} rows x {COLS} cols {dt}, one row per program, BLOCK={block}"),
        shape={"rows": rows, "cols": cols}, tags=["scan"], loops=[_loop("cols", block, cols, COLS)],
        variant={"dtype": dt})


def s_stencil1d(rng):
    dt = rng.choice(["f32", "f16"])
    block = _pow2(64, 1024, rng)
    radius = rng.randint(1, 4)
    grid = rng.randint(2, 4)
    n = _not16(grid * block - rng.randint(0, block // 2))
    return dict(
        constexprs=dict(BLOCK=block, RADIUS=radius), num_warps=_warps(block, rng), grid=(grid, 1, 1),
        params=[_buf("x_ptr", "input", dt, n), _buf("y_ptr", "output", dt, n), ("n", "scalar", "s32", n),
                ("c0", "scalar", "f32", 0.5), ("c1", "scalar", "f32", 0.25)],
        performance=dict(grid=(_cdiv(N_1D, block), 1, 1), scalars={"n": N_1D, "c0": 0.5, "c1": 0.25},
                         counts={"x_ptr": N_1D, "y_ptr": N_1D}, problem=f"2^24 {dt} points, radius {radius}"),
        shape={"n": n}, tags=["stencil", "unrolled"], loops=[], variant={"dtype": dt, "radius": radius})


def s_stencil2d(rng):
    by, bx = _pow2(4, 16, rng), _pow2(16, 64, rng)
    nine = rng.random() < 0.5
    h = _not16(by * rng.randint(1, 2) + rng.randint(1, by))
    w = _not16(bx + rng.randint(1, bx))
    grid = (_cdiv(w, bx), _cdiv(h, by), 1)
    return dict(
        constexprs=dict(BY=by, BX=bx, NINE=int(nine)), num_warps=_warps(by * bx, rng), grid=grid,
        params=[_buf("x_ptr", "input", "f32", h * w), _buf("y_ptr", "output", "f32", h * w),
                ("h", "scalar", "s32", h), ("w", "scalar", "s32", w),
                ("c0", "scalar", "f32", 0.5), ("c1", "scalar", "f32", 0.125)],
        performance=dict(grid=(_cdiv(COLS, bx), _cdiv(ROWS, by), 1),
                         scalars={"h": ROWS, "w": COLS, "c0": 0.5, "c1": 0.125},
                         counts={"x_ptr": ROWS * COLS, "y_ptr": ROWS * COLS},
                         problem=f"{ROWS} x {COLS} f32 grid, {'9' if nine else '5'}-point"),
        shape={"h": h, "w": w}, tags=["stencil", "2d"], loops=[], variant={"points": 9 if nine else 5})


def s_transpose_tiled(rng):
    dt = rng.choice(["f32", "f16"])
    bm, bn = _pow2(16, 64, rng), _pow2(16, 64, rng)
    scale = rng.random() < 0.4
    rows = _not16(bm + rng.randint(1, bm))
    cols = _not16(bn * rng.randint(1, 2) - rng.randint(0, bn // 2) + 1)
    return dict(
        constexprs=dict(BM=bm, BN=bn, SCALE=int(scale)), num_warps=_warps(bm * bn, rng),
        grid=(_cdiv(rows, bm), _cdiv(cols, bn), 1),
        params=[_buf("x_ptr", "input", dt, rows * cols), _buf("y_ptr", "output", dt, rows * cols),
                ("rows", "scalar", "s32", rows), ("cols", "scalar", "s32", cols), ("scale", "scalar", "f32", 2.0)],
        performance=dict(grid=(_cdiv(ROWS, bm), _cdiv(COLS, bn), 1),
                         scalars={"rows": ROWS, "cols": COLS, "scale": 2.0},
                         counts={"x_ptr": ROWS * COLS, "y_ptr": ROWS * COLS},
                         problem=f"{ROWS} x {COLS} {dt}, {bm} x {bn} tiles"),
        shape={"rows": rows, "cols": cols}, tags=["transpose", "2d"], loops=[],
        variant={"dtype": dt, "scale": scale})


def s_gather_rows(rng):
    dt = rng.choice(["f32", "f16"])
    d = _pow2(16, 128, rng)
    bi = _pow2(4, max(4, min(64, 2048 // d)), rng)
    vocab = rng.randint(40, 120)
    n_idx = _not16(bi * 2 - rng.randint(0, bi // 2))
    nw = _warps(bi * d, rng)
    p_idx, p_vocab = max(65536, bi * _cdiv(MIN_PERF_THREADS, 32 * nw)), 32000
    return dict(
        constexprs=dict(BI=bi, D=d), num_warps=nw, grid=(_cdiv(n_idx, bi), 1, 1),
        params=[_buf("table_ptr", "input", dt, vocab * d), _buf("idx_ptr", "input", "s32", n_idx, range=[0, vocab]),
                _buf("out_ptr", "output", dt, n_idx * d), ("n_idx", "scalar", "s32", n_idx)],
        performance=dict(grid=(_cdiv(p_idx, bi), 1, 1), scalars={"n_idx": p_idx},
                         counts={"table_ptr": p_vocab * d, "idx_ptr": p_idx, "out_ptr": p_idx * d},
                         problem=f"{p_idx} lookups of {d}-wide {dt} rows from a {p_vocab}-row table"),
        shape={"n_idx": n_idx, "d": d, "vocab": vocab}, tags=["gather", "indirect"], loops=[],
        variant={"dtype": dt})


def s_scatter_add(rng):
    # s32 only: a float atomic add rounds in arrival order, so its result
    # would depend on the schedule (tests/interp/test_interp_corpus.py checks it does not)
    dt = "s32"
    block = _pow2(64, 1024, rng)
    weighted = rng.random() < 0.5
    grid = rng.randint(2, 3)
    n = _not16(grid * block - rng.randint(0, block // 2))
    bins = rng.choice([16, 64, 256])
    return dict(
        constexprs=dict(BLOCK=block, WEIGHTED=int(weighted)), num_warps=_warps(block, rng), grid=(grid, 1, 1),
        params=[_buf("x_ptr", "input", dt, n, **({"range": [-8, 8]} if dt == "s32" else {})),
                _buf("idx_ptr", "input", "s32", n, range=[0, bins]),
                _buf("out_ptr", "inout", dt, bins, init="zero"), ("n", "scalar", "s32", n)],
        performance=dict(grid=(_cdiv(N_1D, block), 1, 1), scalars={"n": N_1D},
                         counts={"x_ptr": N_1D, "idx_ptr": N_1D, "out_ptr": 65536},
                         problem=f"2^24 {dt} values scattered into 65536 slots"),
        shape={"n": n, "slots": bins}, tags=["scatter", "atomics", "indirect"], loops=[],
        variant={"dtype": dt, "weighted": weighted})


def s_gemv(rng):
    dt = rng.choice(["f32", "f16"])
    bm = _pow2(4, 32, rng)
    bk = _pow2(32, max(32, min(256, 1024 // bm)), rng)
    trips = rng.randint(2, 3)
    m = _not16(bm * 2 - rng.randint(0, bm // 2))
    k = _not16(bk * trips - rng.randint(0, bk // 2))
    nw = _warps(bm * bk, rng)
    p_m = max(ROWS, bm * _cdiv(1 << 16, 32 * nw))  # at least 2^16 threads: a tall matrix (an LM head)
    return dict(
        constexprs=dict(BM=bm, BK=bk, BIAS=int(rng.random() < 0.5)), num_warps=nw,
        grid=(_cdiv(m, bm), 1, 1),
        params=[_buf("a_ptr", "input", dt, m * k), _buf("x_ptr", "input", dt, k), _buf("y_ptr", "output", "f32", m),
                ("m", "scalar", "s32", m), ("k", "scalar", "s32", k)],
        performance=dict(grid=(_cdiv(p_m, bm), 1, 1), scalars={"m": p_m, "k": COLS},
                         counts={"a_ptr": p_m * COLS, "x_ptr": COLS, "y_ptr": p_m},
                         problem=f"{p_m} x {COLS} {dt} matrix times vector, {bm} rows per program"),
        shape={"m": m, "k": k}, tags=["gemv", "reduction"], loops=[_loop("k", bk, k, COLS)],
        variant={"dtype": dt})


def s_gemm_kloop(rng):
    mode = rng.choice(["f16", "f16", "f32-ieee", "f32-tf32"])
    dt = "f16" if mode == "f16" else "f32"
    out = rng.choice(["f32", "f16"]) if dt == "f16" else "f32"
    bm, bn = _pow2(16, 64, rng), _pow2(16, 64, rng)
    bk = _pow2(16, 32, rng)
    trips = rng.randint(2, 3)
    m = _not16(bm + rng.randint(1, bm // 2)) if rng.random() < 0.5 else bm
    n = _not16(bn - rng.randint(1, bn // 4)) if rng.random() < 0.5 else bn
    k = bk * trips if rng.random() < 0.5 else _not16(bk * trips - rng.randint(1, bk // 2))
    m, n = max(m, 2), max(n, 2)
    size = 2048
    return dict(
        constexprs=dict(BM=bm, BN=bn, BK=bk, EPILOGUE=rng.randrange(3), IEEE=int(mode == "f32-ieee")),
        num_warps=rng.choice([1, 2, 4]) if bm * bn <= 1024 else rng.choice([2, 4]), num_stages=rng.choice([1, 2, 3]),
        grid=(_cdiv(m, bm), _cdiv(n, bn), 1),
        params=[_buf("a_ptr", "input", dt, m * k), _buf("b_ptr", "input", dt, k * n), _buf("c_ptr", "output", out, m * n),
                ("m", "scalar", "s32", m), ("n", "scalar", "s32", n), ("k", "scalar", "s32", k)],
        performance=dict(grid=(size // bm, size // bn, 1), scalars={"m": size, "n": size, "k": size},
                         counts={"a_ptr": size * size, "b_ptr": size * size, "c_ptr": size * size},
                         problem=f"{size}^3 {mode} GEMM, {bm} x {bn} x {bk} tiles"),
        shape={"m": m, "n": n, "k": k}, tags=["matmul", "tensor-core" if mode != "f32-ieee" else "fma"],
        loops=[_loop("k", bk, k, size)], variant={"mode": mode, "out": out})


def s_conv1d(rng):
    bx = _pow2(32, 256, rng)
    taps = rng.choice([3, 5, 7])
    c_in = rng.randint(2, 4)
    c_out = rng.randint(2, 3)
    out_len = _not16(bx + rng.randint(1, bx))
    length = out_len + taps - 1
    p_cin, p_cout, p_len = 64, 64, 65536
    p_out = p_len - taps + 1
    return dict(
        constexprs=dict(BX=bx, TAPS=taps, RELU=int(rng.random() < 0.5)), num_warps=_warps(bx, rng),
        grid=(_cdiv(out_len, bx), c_out, 1),
        params=[_buf("x_ptr", "input", "f32", c_in * length), _buf("w_ptr", "input", "f32", c_out * c_in * taps),
                _buf("y_ptr", "output", "f32", c_out * out_len), ("c_in", "scalar", "s32", c_in),
                ("length", "scalar", "s32", length)],
        performance=dict(grid=(_cdiv(p_out, bx), p_cout, 1), scalars={"c_in": p_cin, "length": p_len},
                         counts={"x_ptr": p_cin * p_len, "w_ptr": p_cout * p_cin * taps, "y_ptr": p_cout * p_out},
                         problem=f"{p_cin} -> {p_cout} channels, length {p_len}, {taps} taps, f32"),
        shape={"c_in": c_in, "c_out": c_out, "length": length}, tags=["convolution"],
        loops=[_loop("c_in", 1, c_in, p_cin)], variant={"taps": taps})


def s_conv2d(rng):
    by, bx = _pow2(4, 8, rng), _pow2(16, 32, rng)
    ks = rng.choice([3, 3, 5])
    c_in, c_out = rng.randint(2, 3), 2
    h = _not16(by + rng.randint(1, by))
    w = _not16(bx - rng.randint(0, bx // 2))
    ph = pw = 256
    p_cin = p_cout = 64
    return dict(
        constexprs=dict(BY=by, BX=bx, KS=ks), num_warps=_warps(by * bx, rng),
        grid=(_cdiv(w, bx), _cdiv(h, by), c_out),
        params=[_buf("x_ptr", "input", "f32", c_in * h * w), _buf("w_ptr", "input", "f32", c_out * c_in * ks * ks),
                _buf("y_ptr", "output", "f32", c_out * h * w), ("c_in", "scalar", "s32", c_in),
                ("h", "scalar", "s32", h), ("w", "scalar", "s32", w)],
        performance=dict(grid=(_cdiv(pw, bx), _cdiv(ph, by), p_cout), scalars={"c_in": p_cin, "h": ph, "w": pw},
                         counts={"x_ptr": p_cin * ph * pw, "w_ptr": p_cout * p_cin * ks * ks, "y_ptr": p_cout * ph * pw},
                         problem=f"{p_cin} -> {p_cout} channels, {ph} x {pw}, {ks}x{ks} same-padded, f32"),
        shape={"c_in": c_in, "c_out": c_out, "h": h, "w": w}, tags=["convolution", "2d"],
        loops=[_loop("c_in", 1, c_in, p_cin)], variant={"ks": ks})


def s_attention_fwd(rng):
    dt = rng.choice(["f16", "bf16"])
    bm, bn = _pow2(16, 64, rng), _pow2(16, 64, rng)
    d = _pow2(16, 64, rng)
    causal = rng.random() < 0.5
    seq = max(bm, bn) * rng.randint(2, 3)
    while seq * d > 4096 and seq > max(bm, bn):
        seq -= max(bm, bn)
    p_seq = max(4096, bm * (1 << 16) // 128)  # at least 2^16 threads: one long-context head
    return dict(
        constexprs=dict(BM=bm, BN=bn, D=d, CAUSAL=int(causal)), num_warps=4, num_stages=rng.choice([1, 2]),
        grid=(seq // bm, 1, 1),
        params=[_buf("q_ptr", "input", dt, seq * d), _buf("k_ptr", "input", dt, seq * d),
                _buf("v_ptr", "input", dt, seq * d), _buf("o_ptr", "output", "f32", seq * d),
                ("seq_len", "scalar", "s32", seq), ("scale", "scalar", "f32", round(1 / math.sqrt(d), 6))],
        performance=dict(grid=(p_seq // bm, 1, 1), scalars={"seq_len": p_seq, "scale": round(1 / math.sqrt(d), 6)},
                         counts={"q_ptr": p_seq * d, "k_ptr": p_seq * d, "v_ptr": p_seq * d, "o_ptr": p_seq * d},
                         problem=f"one head, seq {p_seq} x head_dim {d} {dt}{', causal' if causal else ''}"),
        shape={"seq": seq, "head_dim": d}, tags=["tensor-core", "online-softmax"] + (["causal"] if causal else []),
        loops=[_loop("seq_len", bn, seq, p_seq)], variant={"dtype": dt, "causal": causal})


def s_histogram_atomic(rng):
    bins = _pow2(16, 256, rng)
    block = _pow2(64, 1024, rng)
    local = rng.random() < 0.5
    iters = rng.randint(2, 3)
    grid = 2
    n = _not16(grid * iters * block - rng.randint(0, block // 2))
    p_iters = rng.choice([4, 16, 64])
    nw = _warps(block, rng)
    while p_iters > 1 and _cdiv(N_1D, p_iters * block) * 32 * nw < MIN_PERF_THREADS:
        p_iters //= 4
    return dict(
        constexprs=dict(BLOCK=block, NUM_BINS=bins, LOCAL=int(local)), num_warps=nw,
        grid=(grid, 1, 1),
        params=[_buf("x_ptr", "input", "s32", n, range=[0, bins]), _buf("bins_ptr", "inout", "s32", bins, init="zero"),
                ("n", "scalar", "s32", n), ("iters", "scalar", "s32", iters)],
        performance=dict(grid=(_cdiv(N_1D, p_iters * block), 1, 1), scalars={"n": N_1D, "iters": p_iters},
                         counts={"x_ptr": N_1D, "bins_ptr": bins},
                         problem=f"2^24 s32 values into {bins} bins, {p_iters} blocks of {block} per program"),
        shape={"n": n, "bins": bins}, tags=["histogram", "atomics"], loops=[_loop("iters", 1, iters, p_iters)],
        variant={"local": local})


#: family -> (template group, sampler). Groups are what held-out evaluation
#: splits on: a group's families share a template's structure.
FAMILIES = {
    "ew_chain": ("pointwise", s_ew_chain),
    "softmax_rows": ("row_reduction", s_softmax_rows),
    "layernorm_rows": ("row_reduction", s_layernorm_rows),
    "rmsnorm_rows": ("row_reduction", s_rmsnorm_rows),
    "reduce_partial": ("full_reduction", s_reduce_partial),
    "scan_rows": ("prefix_scan", s_scan_rows),
    "stencil1d": ("stencil", s_stencil1d),
    "stencil2d": ("stencil", s_stencil2d),
    "transpose_tiled": ("tile_transpose", s_transpose_tiled),
    "gather_rows": ("gather_scatter", s_gather_rows),
    "scatter_add": ("gather_scatter", s_scatter_add),
    "gemv": ("gemv", s_gemv),
    "gemm_kloop": ("tiled_gemm", s_gemm_kloop),
    "conv1d": ("convolution", s_conv1d),
    "conv2d": ("convolution", s_conv2d),
    "attention_fwd": ("attention_block", s_attention_fwd),
    "histogram_atomic": ("histogram_bins", s_histogram_atomic),
}


def variants(family: str, seed: int, count: int) -> list[dict]:
    """*count* distinct variants of *family* (deterministic in seed, family, count)."""
    group, sampler = FAMILIES[family]
    rng = random.Random(f"{seed}:{family}")
    out, seen, tries = [], set(), 0
    while len(out) < count and tries < 50 * count:
        tries += 1
        v = sampler(rng)
        v.setdefault("num_stages", 1)
        key = json.dumps([v["constexprs"], v["num_warps"], v["num_stages"], v["variant"]], sort_keys=True)
        if key in seen:
            continue
        seen.add(key)
        out.append(v)
    return out


def _load_templates():
    import importlib.util

    spec = importlib.util.spec_from_file_location("ptxopt_corpus_family_templates", TEMPLATES)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def build(writer, rg, seed: int = DEFAULT_SEED, per_family: int = DEFAULT_PER_FAMILY, families=None) -> list[dict]:
    """Compile every variant (the Triton families, then the CUDA C ones of
    ``gen_cuda_families.py``); return the manifest entries. Called by
    regenerate.py, which passes itself as *rg* (its Triton session and compile step)."""
    sys.path.insert(0, str(CORPUS))
    try:
        import gen_cuda_families
    finally:
        sys.path.remove(str(CORPUS))
    with rg.triton_session() as (triton, ASTSource, target):
        templates = _load_templates()
        kernels, keep = [], set()
        for family in families or FAMILIES:
            group = FAMILIES[family][0]
            out_dir = FAMILIES_DIR / family
            for i, v in enumerate(variants(family, seed, per_family)):
                name = f"{family}_{i:02d}"
                spec = dict(name=name, kernel=getattr(templates, family), family=family, grid=v["grid"],
                            num_warps=v["num_warps"], num_stages=v["num_stages"], constexprs=v["constexprs"],
                            params=v["params"], shape=v["shape"], tags=v["tags"], performance=v["performance"])
                entry = rg._compile_triton(triton, ASTSource, target, TEMPLATES, spec, writer, keep, out_dir=out_dir)
                entry["id"] = f"gen_{name}"
                entry["group"] = group
                entry["loops"] = v["loops"]
                entry["variant"] = {"seed": seed, "index": i, "template": family, **v["variant"]}
                kernels.append(entry)
            writer.prune(out_dir, "*.ptx", keep)
    # the CUDA C families (nvcc), after the Triton ones in the manifest
    cuda_kernels, nvcc = gen_cuda_families.build(writer, rg, seed, per_family)
    kernels += cuda_kernels
    record = {"seed": seed, "per_family": per_family, "triton": triton.__version__, "nvcc": nvcc,
              "nvcc_flags": " ".join(gen_cuda_families.NVCC_FLAGS), "target": "sm_89",
              "families": {f: FAMILIES[f][0] for f in (families or FAMILIES)},
              "cuda_families": {f: g for f, (g, _, _) in gen_cuda_families.CUDA_FAMILIES.items()},
              "kernels": len(kernels)}
    writer.write(FAMILIES_DIR / "GENERATION.json", json.dumps(record, indent=1) + "\n")
    return kernels


def main(argv=None) -> int:
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=DEFAULT_SEED)
    ap.add_argument("--per-family", type=int, default=DEFAULT_PER_FAMILY)
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args(argv)
    sys.path.insert(0, str(CORPUS))
    import regenerate as rg

    rg.FAMILY_OPTIONS.update(seed=args.seed, per_family=args.per_family)
    return rg.main(["families"] + (["--check"] if args.check else []))


if __name__ == "__main__":
    sys.exit(main())
