"""The launch footprint from the kernel's address expressions (ptxopt.analysis.global_footprint)
against the bytes the interpreter actually touches on the check launch.

``exact`` buffers must match the interpreter byte for byte and sector for sector (a union over threads,
blocks and loop iterations); ``extrapolated`` ones must not count fewer bytes than were touched (an
upper bound).  The hand-written kernels below make the classes the analysis must get right: a
grid-stride loop whose trip depends on the thread, a stencil whose neighbours overlap, a guard that
clips the last block, a 2-D tile with a loop, a gather through loaded indices (``unknown``).
"""

from __future__ import annotations

import numpy as np
import pytest

from ptxopt.analysis.global_footprint import SECTOR, footprint_of_text, launch_footprint
from ptxopt.kernels.corpus import load_manifest
from ptxopt.interp import run_kernel
from ptxopt.interp.device_memory import STORED
from ptxopt.interp.workload import make_args
from ptxopt.ptx.parser import parse

from corpus_tiers import corpus_params

KERNELS = [k for k in load_manifest() if k.family != "gemm_tile"]


def _touched(module, entry, grid, block, args, names, shared=0):
    """Per buffer name: (read bytes, written bytes, read sectors, written sectors) the interpreter touched."""
    res = run_kernel(module, entry, grid, block, args, shared, reads=True)
    out = {}
    for name, tags in (res.reads or {}).items():
        if name not in names:
            continue
        tags = np.asarray(tags)
        r = (tags & ~np.uint32(STORED)) != 0
        w = (tags & np.uint32(STORED)) != 0
        idx = np.arange(tags.size)
        out[name] = (int(r.sum()), int(w.sum()), int(np.unique(idx[r] // SECTOR).size),
                     int(np.unique(idx[w] // SECTOR).size))
    return out


def _check(fp, touched):
    """Exact counts equal what was touched, upper bounds are not below it, and the DRAM floor never
    exceeds the sectors the launch touched."""
    if fp.floor_bytes is not None:
        assert fp.floor_bytes <= SECTOR * sum(t[2] + t[3] for t in touched.values()), (fp, touched)
    for b in fp.buffers:
        if b.name not in touched:
            continue
        rb, wb, rs, ws = touched[b.name]
        if b.source == "exact":
            assert (b.read_bytes, b.write_bytes) == (rb, wb), (b, touched[b.name])
            if b.read_sectors is not None:
                assert b.read_sectors == rs, (b, touched[b.name])
            if b.write_sectors is not None:
                assert b.write_sectors == ws, (b, touched[b.name])
        elif b.source == "extrapolated":
            if b.read_bytes is not None:
                assert b.read_bytes >= rb, (b, touched[b.name])
            if b.write_bytes is not None:
                assert b.write_bytes >= wb, (b, touched[b.name])


@pytest.mark.parametrize("spec", corpus_params(KERNELS))
def test_footprint_matches_the_interpreter_on_the_check_launch(spec):
    module = parse(spec.ptx_text(), spec.id)
    scalars = {p.name: p.value for p in spec.params if p.role == "scalar"}
    fp = launch_footprint(module.pick_entry(spec.entry), spec.launch.grid, spec.launch.block, scalars)
    names = {p.name for p in spec.params if p.role != "scalar"}
    touched = _touched(module, spec.entry, spec.launch.grid, spec.launch.block, make_args(spec, 0), names,
                       spec.launch.shared_bytes)
    _check(fp, touched)


_HEAD = """.version 8.0
.target sm_89
.address_size 64
"""

GRID_STRIDE = _HEAD + """
.visible .entry gs(.param .u32 n, .param .u64 x, .param .u64 y)
{
  .reg .pred %p<3>; .reg .b32 %r<12>; .reg .b64 %rd<8>; .reg .f32 %f<3>;
  ld.param.u32 %r6, [n];
  ld.param.u64 %rd3, [x];
  ld.param.u64 %rd4, [y];
  mov.u32 %r1, %ntid.x;
  mov.u32 %r7, %ctaid.x;
  mov.u32 %r8, %tid.x;
  mad.lo.s32 %r10, %r7, %r1, %r8;
  setp.ge.s32 %p1, %r10, %r6;
  @%p1 bra DONE;
  mov.u32 %r9, %nctaid.x;
  mul.lo.s32 %r3, %r1, %r9;
  cvta.to.global.u64 %rd1, %rd3;
  cvta.to.global.u64 %rd2, %rd4;
LOOP:
  mul.wide.s32 %rd5, %r10, 4;
  add.s64 %rd6, %rd1, %rd5;
  ld.global.f32 %f1, [%rd6];
  add.s64 %rd7, %rd2, %rd5;
  st.global.f32 [%rd7], %f1;
  add.s32 %r10, %r10, %r3;
  setp.lt.s32 %p2, %r10, %r6;
  @%p2 bra LOOP;
DONE:
  ret;
}
"""

STENCIL = _HEAD + """
.visible .entry st(.param .u32 n, .param .u64 x, .param .u64 y)
{
  .reg .pred %p<3>; .reg .b32 %r<12>; .reg .b64 %rd<8>; .reg .f32 %f<5>;
  ld.param.u32 %r6, [n];
  ld.param.u64 %rd3, [x];
  ld.param.u64 %rd4, [y];
  mov.u32 %r1, %ntid.x;
  mov.u32 %r7, %ctaid.x;
  mov.u32 %r8, %tid.x;
  mad.lo.s32 %r10, %r7, %r1, %r8;
  add.s32 %r10, %r10, 1;
  setp.ge.s32 %p1, %r10, %r6;
  @%p1 bra DONE;
  cvta.to.global.u64 %rd1, %rd3;
  cvta.to.global.u64 %rd2, %rd4;
  mul.wide.s32 %rd5, %r10, 4;
  add.s64 %rd6, %rd1, %rd5;
  ld.global.f32 %f1, [%rd6+-4];
  ld.global.f32 %f2, [%rd6];
  ld.global.f32 %f3, [%rd6+4];
  add.f32 %f4, %f1, %f2;
  add.f32 %f4, %f4, %f3;
  add.s64 %rd7, %rd2, %rd5;
  st.global.f32 [%rd7], %f4;
DONE:
  ret;
}
"""

GATHER = _HEAD + """
.visible .entry ga(.param .u64 idx, .param .u64 x, .param .u64 y)
{
  .reg .b32 %r<6>; .reg .b64 %rd<10>; .reg .f32 %f<2>;
  ld.param.u64 %rd1, [idx];
  ld.param.u64 %rd2, [x];
  ld.param.u64 %rd3, [y];
  mov.u32 %r1, %tid.x;
  mul.wide.u32 %rd4, %r1, 4;
  add.s64 %rd5, %rd1, %rd4;
  ld.global.u32 %r2, [%rd5];
  mul.wide.u32 %rd6, %r2, 4;
  add.s64 %rd7, %rd2, %rd6;
  ld.global.f32 %f1, [%rd7];
  add.s64 %rd8, %rd3, %rd4;
  st.global.f32 [%rd8], %f1;
  ret;
}
"""


def _run(text, entry, grid, block, args, scalars, shared=0):
    module = parse(text, entry)
    fp = footprint_of_text(text, entry, grid, block, scalars)
    names = {p for p, a in args.items() if isinstance(a, np.ndarray)}
    touched = _touched(module, entry, grid, block, args, names, shared)
    return fp, touched


@pytest.mark.parametrize("n,grid", [(1000, 2), (1024, 2), (1000, 8), (37, 1)])
def test_grid_stride_loop_is_exact(n, grid):
    """The trip of a grid-stride loop depends on the thread; the union is still [0, n)."""
    args = {"n": n, "x": np.zeros(1024, np.float32), "y": np.zeros(1024, np.float32)}
    fp, touched = _run(GRID_STRIDE, "gs", (grid, 1, 1), (128, 1, 1), args, {"n": n})
    assert fp.source == "exact"
    assert {b.name: b.read_bytes for b in fp.buffers} == {"x": 4 * n, "y": 0}
    _check(fp, touched)
    big = footprint_of_text(GRID_STRIDE, "gs", (4096, 1, 1), (256, 1, 1), {"n": 1 << 26})
    assert big.source == "exact" and big.floor_bytes == 2 * 4 * (1 << 26)


@pytest.mark.parametrize("n", [200, 256, 300])
def test_stencil_neighbours_are_one_union(n):
    """Three overlapping reads (i-1, i, i+1) are one interval, never three times the bytes."""
    args = {"n": n, "x": np.zeros(512, np.float32), "y": np.zeros(512, np.float32)}
    fp, touched = _run(STENCIL, "st", (3, 1, 1), (128, 1, 1), args, {"n": n})
    assert fp.source == "exact"
    x = next(b for b in fp.buffers if b.name == "x")
    assert x.read_bytes == 4 * (min(n, 3 * 128 + 1) + 1)  # elements 0 .. min(n, 385)
    _check(fp, touched)


def test_gather_is_unknown_not_exact():
    args = {"idx": np.arange(64, dtype=np.uint32)[::-1].copy(), "x": np.zeros(64, np.float32),
            "y": np.zeros(64, np.float32)}
    fp, touched = _run(GATHER, "ga", (1, 1, 1), (64, 1, 1), args, {})
    assert fp.source == "unknown"
    by = {b.name: b for b in fp.buffers}
    assert by["idx"].source == "exact" and by["idx"].read_bytes == 256
    # the gather adds bytes nobody counted: the exact buffers still bound DRAM from below
    assert fp.floor_bytes == 256 + 256
    _check(fp, touched)
