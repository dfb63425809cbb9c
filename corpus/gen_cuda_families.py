#!/usr/bin/env python3
"""Generate the CUDA C kernel families of the corpus (issue 30).

The Triton families (``gen_families.py``) all come out of one compiler's
code generator; nvcc writes different PTX for the same algorithms (scalar
loads, grid-stride loops, ``atom.shared``, ``bar.sync`` around shared tiles,
f64). This script draws, per family, ``--per-family`` variants of one CUDA C
template in ``families/cuda_templates/`` -- dtypes, block shapes, tile sizes,
unrolling, fused operations, stencil shapes, key types, privatised bins --
as ``-D`` macros, compiles each with ``nvcc -arch=sm_89 -O3 --ptx`` into
``families/FAMILY/FAMILY_NN.ptx`` (entry ``FAMILY_NN``, id ``gen_FAMILY_NN``)
and returns its manifest entry: check launch, performance launch, template
``group`` (existing groups: the templates are the same algorithms as their
Triton counterparts), ``loops`` (each runtime loop's bound argument, step
and trip counts at both launches) and ``variant`` (the drawn macros).

Seeded and reproducible like ``gen_families.py``: a family's variants depend
only on the seed, the family name and the count (string-seeded
``random.Random``); the PTX only on the nvcc release, which the manifest's
``generator`` field and ``families/GENERATION.json`` record. nvcc is needed
only here (the PTX is committed); tests import this module for
:func:`variants` alone.

PTX ISA version: nvcc 13.0 writes ``.version 9.0``, like the hand-written
``cuda/`` kernels; it is kept as written (no fix-up). ptxas 12.9
(``nvidia-cuda-nvcc-cu12``) rejects 9.0; ptxas 13.x (``nvidia-cuda-nvcc``)
accepts it, and ``ptxopt.toolchain.locate`` picks the oldest installed ptxas
that accepts a module's version.

Run through ``gen_families.py`` / ``regenerate.py families``, which own the
manifest (these entries follow the Triton families').
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import tempfile
from pathlib import Path

CORPUS = Path(__file__).resolve().parent
FAMILIES_DIR = CORPUS / "families"
TEMPLATE_DIR = FAMILIES_DIR / "cuda_templates"
NVCC_FLAGS = ["-arch=sm_89", "-O3", "--ptx"]

N_1D = 1 << 24
GRID_STRIDE_BLOCKS = 4096  # performance grid of the grid-stride templates (corpus/README.md)


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _pow2(lo: int, hi: int, rng: random.Random) -> int:
    return 1 << rng.randint(lo.bit_length() - 1, hi.bit_length() - 1)


def _ragged(v: int, rng: random.Random, most: int) -> int:
    """A size a little below *v* (by 1..most), so check launches exercise the edge guards."""
    return v - rng.randint(1, max(1, most))


def _loop(bound: str, step, trips_check: int, trips_perf: int, loops: int = 1) -> dict:
    """One runtime loop: bound argument, step (an int, or the grid-stride
    expression), loops sharing that bound, trip counts at both launches."""
    return {"bound": bound, "step": step, "loops": loops, "trips_check": trips_check, "trips_performance": trips_perf}


_CTYPE = {"f32": "float", "f64": "double", "u8": "unsigned char", "u16": "unsigned short", "s32": "int"}


# --------------------------------------------------------------------------
# samplers: rng -> dict(macros, grid, block, params, performance, shape, tags, loops, variant)
# params: (arg, role, dtype, count_or_value[, extra]) in the entry's order;
# performance: grid, block, values (every argument: scalar value or buffer count), problem


def s_saxpy_chain(rng):
    dt = rng.choice(["f32", "f64"])
    vec = 4 if dt == "f32" and rng.random() < 0.5 else 1
    nops = rng.randint(1, 3)
    ops = [rng.randrange(6) for _ in range(3)]
    unroll = rng.choice([1, 2, 4])
    block = _pow2(64, 256, rng)
    grid = rng.randint(1, 2)
    trips = rng.randint(2, 4)
    stride = grid * block
    n = _ragged(stride * trips * vec, rng, block // 2 * vec)
    a, b = round(rng.uniform(0.25, 2.0), 3), round(rng.uniform(0.25, 1.5), 3)
    p_stride = GRID_STRIDE_BLOCKS * block
    macros = dict(DTYPE=_CTYPE[dt], VEC_W=vec, N_OPS=nops, OP_1=ops[0], OP_2=ops[1], OP_3=ops[2], UNROLL_N=unroll)
    return dict(
        macros=macros, grid=(grid, 1, 1), block=(block, 1, 1),
        params=[("x", "input", dt, n), ("y", "inout", dt, n), ("a", "scalar", dt, a), ("b", "scalar", dt, b),
                ("n", "scalar", "s32", n)],
        performance=dict(grid=(GRID_STRIDE_BLOCKS, 1, 1), block=(block, 1, 1),
                         values={"x": N_1D, "y": N_1D, "a": 0.5, "b": 0.75, "n": N_1D},
                         problem=f"2^24 {dt} elements, grid-stride over {GRID_STRIDE_BLOCKS} blocks of {block}"),
        shape={"n": n}, tags=["grid-stride", "fused-chain"] + (["vectorized"] if vec == 4 else []) +
        (["fp64"] if dt == "f64" else []),
        # the main loop (over n / VEC_W elements); VEC_W=4 adds a tail loop on the same bound (< 1 trip per thread)
        loops=[_loop("n", f"{vec}*gridDim.x*blockDim.x" if vec > 1 else "gridDim.x*blockDim.x",
                     _cdiv(n // vec, stride), _cdiv(N_1D // vec, p_stride), loops=2 if vec > 1 else 1)],
        variant={"dtype": dt, "vec": vec, "ops": ops[:nops], "unroll": unroll})


def s_stencil2d(rng):
    dt = rng.choice(["f32", "f64"])
    radius = rng.choice([1, 2])
    box = rng.random() < 0.5
    bx = rng.choice([16, 32, 64])
    by = rng.choice([b for b in (1, 2, 4, 8) if bx * b <= 256])
    gx = 2 if bx * by <= 128 and rng.random() < 0.5 else 1
    gy = 1
    trips = rng.randint(2, 3)
    w = _ragged(bx * gx, rng, bx // 4)
    h = _ragged(by * gy * trips, rng, by // 2) if by > 1 else by * gy * trips
    npts = (2 * radius + 1) ** 2 if box else 4 * radius + 1
    pw = ph = 4096
    rows_per = rng.choice([1, 2, 4, 8])
    pgy = ph // (by * rows_per)
    coef = int(rng.random() < 0.5)
    unroll = rng.choice([1, 2, 4])
    macros = dict(DTYPE=_CTYPE[dt], RADIUS=radius, BOX_STENCIL=int(box), COEF=coef, UNROLL_N=unroll)
    return dict(
        macros=macros, grid=(gx, gy, 1), block=(bx, by, 1),
        params=[("in", "input", dt, w * h), ("wts", "input", dt, npts), ("out", "output", dt, w * h),
                ("w", "scalar", "s32", w), ("h", "scalar", "s32", h)],
        performance=dict(grid=(pw // bx, pgy, 1), block=(bx, by, 1),
                         values={"in": pw * ph, "wts": npts, "out": pw * ph, "w": pw, "h": ph},
                         problem=f"{ph} x {pw} {dt}, {npts}-point {'box' if box else 'star'} radius {radius}, "
                                 f"{rows_per} row(s) per thread"),
        shape={"w": w, "h": h, "points": npts}, tags=["stencil", "2d"] + (["fp64"] if dt == "f64" else []),
        loops=[_loop("h", "gridDim.y*blockDim.y", _cdiv(h, gy * by), _cdiv(ph, pgy * by))],
        variant={"dtype": dt, "radius": radius, "box": box, "compiled_weights": bool(coef), "unroll": unroll})


def s_hist_smem(rng):
    key = rng.choice(["u8", "u16", "s32"])
    bins = _pow2(16, 256, rng)
    block = _pow2(64, 512, rng)
    priv = rng.choice([1, block // 32])
    grid = rng.randint(1, 2)
    trips = rng.randint(2, 3)
    n = _ragged(grid * block * trips, rng, block // 2)
    per_thread = rng.choice([4, 16, 64])
    p_grid = N_1D // (block * per_thread)
    macros = dict(KEY_T=_CTYPE[key], N_BINS=bins, N_PRIV=priv)
    return dict(
        macros=macros, grid=(grid, 1, 1), block=(block, 1, 1),
        params=[("keys", "input", key, n, {"range": [0, bins]}), ("bins", "inout", "u32", bins, {"init": "zero"}),
                ("n", "scalar", "s32", n)],
        performance=dict(grid=(p_grid, 1, 1), block=(block, 1, 1), values={"keys": N_1D, "bins": bins, "n": N_1D},
                         problem=f"2^24 {key} keys into {bins} bins, grid-stride: {p_grid} blocks of {block}, "
                                 f"{per_thread} keys per thread"),
        shape={"n": n, "bins": bins}, tags=["histogram", "atomics", "shared-memory", "syncthreads", "grid-stride"],
        loops=[_loop("n", "gridDim.x*blockDim.x", _cdiv(n, grid * block), _cdiv(N_1D, p_grid * block))],
        variant={"key": key, "bins": bins, "private_copies": priv})


def s_gemm_ktile(rng):
    dt = rng.choice(["f32", "f64"])
    # f64: tiles up to 16 (the check launch's f64 FMAs dominate its interpreted time)
    tile = rng.choice([8, 16, 32] if dt == "f32" else [8, 16])
    # at most 256 threads a block: the interpreter runs a 512-thread block with barriers ~20x slower
    tm = rng.choice([t for t in (1, 2, 4) if tile // t >= 4 and tile * tile // t <= 256])
    beta = rng.random() < 0.5
    pad = rng.random() < 0.5
    threads = tile * tile // tm
    gx = 2 if threads < 256 and rng.random() < 0.6 else 1
    gy = 2 if threads * gx <= 256 and rng.random() < 0.5 else 1
    if dt == "f64":  # one block: the interpreter's exactly rounded fma.rn.f64 costs ~20 us each
        gx = gy = 1
    trips = rng.randint(2, 3) if tile < 32 else 2  # 256 threads x 64 K steps at most: interpreted in well under 1 s
    m, n = _ragged(tile * gy, rng, tile // 4), _ragged(tile * gx, rng, tile // 4)
    k = _ragged(tile * trips, rng, tile // 2)
    pm = 2048 if dt == "f32" else 1024
    alpha, b = round(rng.uniform(0.5, 1.5), 3), round(rng.uniform(0.25, 1.0), 3)
    macros = dict(DTYPE=_CTYPE[dt], TILE_SZ=tile, TM_ROWS=tm, WITH_BETA=int(beta), SMEM_PAD=int(pad))
    return dict(
        macros=macros, grid=(gx, gy, 1), block=(tile, tile // tm, 1),
        params=[("A", "input", dt, m * k), ("B", "input", dt, k * n), ("C", "inout" if beta else "output", dt, m * n),
                ("M", "scalar", "s32", m), ("N", "scalar", "s32", n), ("K", "scalar", "s32", k),
                ("alpha", "scalar", dt, alpha), ("beta", "scalar", dt, b)],
        performance=dict(grid=(pm // tile, pm // tile, 1), block=(tile, tile // tm, 1),
                         values={"A": pm * pm, "B": pm * pm, "C": pm * pm, "M": pm, "N": pm, "K": pm,
                                 "alpha": 1.0, "beta": 0.5 if beta else 0.0},
                         problem=f"C = alpha A B{' + beta C' if beta else ''}, {pm}^3 {dt}, "
                                 f"{tile}x{tile} shared tiles, {tm} row(s) per thread"),
        shape={"m": m, "n": n, "k": k}, tags=["shared-memory", "syncthreads"] + (["fp64"] if dt == "f64" else []),
        loops=[_loop("K", tile, _cdiv(k, tile), _cdiv(pm, tile))],
        variant={"dtype": dt, "tile": tile, "rows_per_thread": tm, "beta": beta, "pad": pad})


#: family -> (template group, template file, sampler)
CUDA_FAMILIES = {
    "cu_saxpy_chain": ("pointwise", "saxpy_chain.cu", s_saxpy_chain),
    "cu_stencil2d": ("stencil", "stencil2d.cu", s_stencil2d),
    "cu_hist_smem": ("histogram_bins", "hist_smem.cu", s_hist_smem),
    "cu_gemm_ktile": ("tiled_gemm", "gemm_ktile.cu", s_gemm_ktile),
}


def variants(family: str, seed: int, count: int) -> list[dict]:
    """*count* distinct variants of *family* (deterministic in seed, family, count)."""
    sampler = CUDA_FAMILIES[family][2]
    rng = random.Random(f"{seed}:{family}")
    out, seen, tries = [], set(), 0
    while len(out) < count and tries < 50 * count:
        tries += 1
        v = sampler(rng)
        key = json.dumps([v["macros"], v["block"], v["variant"]], sort_keys=True)
        if key in seen:
            continue
        seen.add(key)
        out.append(v)
    return out


def nvcc_path() -> str:
    return os.environ.get("NVCC") or shutil.which("nvcc") or "/usr/local/bin/nvcc"


def _defines(name: str, macros: dict) -> list[str]:
    return [f"-DKNAME={name}"] + [f"-D{k}={v}" for k, v in macros.items()]


def build(writer, rg, seed: int, per_family: int, families=None) -> tuple[list[dict], str]:
    """Compile every variant; return (manifest entries, nvcc version). *rg* is
    regenerate.py (its parameter, performance and PTX helpers)."""
    nvcc = nvcc_path()
    version = rg.nvcc_version(nvcc)
    kernels = []
    with tempfile.TemporaryDirectory() as tmp:
        for family in families or CUDA_FAMILIES:
            group, template, _ = CUDA_FAMILIES[family]
            out_dir = FAMILIES_DIR / family
            keep = set()
            for i, v in enumerate(variants(family, seed, per_family)):
                name = f"{family}_{i:02d}"
                flags = NVCC_FLAGS + _defines(name, v["macros"])
                tmp_ptx = Path(tmp) / f"{name}.ptx"
                # relative source path and cwd: no local paths in the PTX
                subprocess.run([nvcc, *flags, "-o", str(tmp_ptx), template], cwd=TEMPLATE_DIR, check=True)
                ptx = tmp_ptx.read_text()
                path = out_dir / f"{name}.ptx"
                writer.write(path, ptx)
                keep.add(path)
                kid = f"gen_{name}"
                declared = [rg.make_param(None, arg, role, dt, amount, rest[0] if rest else None)
                            for arg, role, dt, amount, *rest in v["params"]]
                params = rg.attach_ptx_names(kid, declared, rg.ptx_entry_params(ptx, name))
                perf = v["performance"]
                kernels.append({
                    "id": kid,
                    "family": family,
                    "compiler": "nvcc",
                    "path": path.relative_to(CORPUS).as_posix(),
                    "entry": name,
                    "source": (TEMPLATE_DIR / template).relative_to(CORPUS).as_posix(),
                    "generator": f"nvcc {version} {' '.join(flags)}",
                    "arch": rg.ARCH,
                    "ptx_version": rg.ptx_version(ptx),
                    "launch": {"grid": list(v["grid"]), "block": list(v["block"]), "shared_bytes": 0},
                    "performance": rg.performance_entry(kid, perf["grid"], perf["block"], 0, perf["values"],
                                                        perf["problem"], params),
                    "params": params,
                    "shape": v["shape"],
                    "tags": v["tags"],
                    "group": group,
                    "loops": v["loops"],
                    "variant": {"seed": seed, "index": i, "template": template, **v["variant"]},
                })
            writer.prune(out_dir, "*.ptx", keep)
    return kernels, version
