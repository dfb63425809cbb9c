"""Loop trip counts at the performance launch: the loop-control
slice (:mod:`ptxopt.measure.loop_slice`) runs one warp under the performance
launch's scalars, grid and block; the check launch only checks."""

from __future__ import annotations

import pytest

from ptxopt.kernels.corpus import get
from ptxopt.equivalence.interpret import Geometry
from ptxopt.equivalence.launch import Launch, Role, performance_of
from ptxopt.measure.loop_slice import SliceError, performance_loop_profile, trip_counts_for
from ptxopt.measure.measured_trips import loop_profile
from ptxopt.ptx.parser import parse

# bound = (ctaid.x + 1) * n: blocks differ, the scalar scales
TRI = """
.version 8.8
.target sm_89
.address_size 64
.visible .entry tri(.param .u64 out, .param .u32 n)
{
  .reg .pred %p<2>;
  .reg .b32 %r<8>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [out];
  ld.param.u32 %r1, [n];
  mov.u32 %r2, %ctaid.x;
  add.s32 %r3, %r2, 1;
  mul.lo.s32 %r3, %r3, %r1;
  mov.u32 %r4, 0;
$L_loop:
  add.s32 %r4, %r4, 1;
  setp.lt.s32 %p1, %r4, %r3;
  @%p1 bra $L_loop;
  cvta.to.global.u64 %rd2, %rd1;
  st.global.u32 [%rd2], %r4;
  ret;
}
"""

# the bound is read from memory: the launch does not decide the trip count
DATA = TRI.replace("ld.param.u32 %r1, [n];", "ld.param.u32 %r1, [n];\n  cvta.to.global.u64 %rd3, %rd1;\n"
                                             "  ld.global.u32 %r1, [%rd3];")


def _perf(grid, scalars, block=(32, 1, 1)):
    return Launch(grid, block, 0, scalars, role=Role.PERFORMANCE, source="test")


def test_trips_follow_the_performance_scalar_and_the_block_index():
    m = parse(TRI)
    check = Geometry(grid=(1, 1, 1), block=(32, 1, 1), scalars={"n": 2})
    (c,) = loop_profile(m, "tri", geometry=check).counts
    assert c.trips_per_entry == 2  # the check launch: block 0, n=2
    # performance: n=3, grid 5 -> sampled blocks 0, 2, 4 -> 3, 9, 15 trips; mean 9
    (p,) = performance_loop_profile(m, "tri", _perf((5, 1, 1), {"n": 3}), geometry=check).counts
    assert p.trips_per_entry == 9
    (p,) = performance_loop_profile(m, "tri", _perf((1, 1, 1), {"n": 200}), geometry=check).counts
    assert p.trips_per_entry == 200


def test_a_bound_read_from_memory_is_refused_and_the_check_launch_is_said():
    check = Geometry(grid=(1, 1, 1), block=(32, 1, 1), scalars={"n": 2})
    with pytest.raises(SliceError, match="depends on data"):
        performance_loop_profile(parse(DATA), "tri", _perf((5, 1, 1), {"n": 3}), geometry=check)


def test_matmul_k_loop_counts_the_performance_k():
    """triton_matmul_f16: BLOCK_K 16; the check launch's K=64 gives 4 K-steps, the performance
    launch's K=2048 gives 128 (the 2048^3 launch must not be estimated with the check launch's 4)."""
    k = get("triton_matmul_f16")
    m = parse(k.ptx_text())
    (c,) = loop_profile(m, k.entry, spec=k).counts
    perf = performance_of(k)
    (p,) = performance_loop_profile(m, k.entry, perf, spec=k).counts
    assert (c.trips_per_entry, p.trips_per_entry) == (4, 128)
    half = Launch(perf.grid, perf.block, perf.shared_bytes, {**perf.scalars, "matmul_f16_param_5": 1024},
                  role=Role.PERFORMANCE)
    (h,) = performance_loop_profile(m, k.entry, half, spec=k).counts
    assert h.trips_per_entry == 64


def test_grid_stride_loop_follows_grid_and_block():
    """cuda_saxpy is a grid-stride loop: trips = n / (grid * block) at the performance launch."""
    k = get("cuda_saxpy")
    perf = performance_of(k)
    n = perf.scalars["saxpy_param_0"]
    (p,) = performance_loop_profile(parse(k.ptx_text()), k.entry, perf, spec=k).counts
    threads = perf.blocks * perf.threads_per_block
    assert p.trips_per_entry == -(-n // threads)


def test_trip_counts_for_prefers_the_performance_launch_and_says_when_it_cannot():
    from ptxopt.sim.sass_decode import decode
    from ptxopt.toolchain import compile_ptx, disassemble

    k = get("triton_matmul_f16")
    compiled = compile_ptx(k.ptx_text(), k.arch)
    program = decode(disassemble(compiled.cubin), k.entry)
    m = parse(k.ptx_text())
    trips, source, notes = trip_counts_for(program, m, k.entry, check={"spec": k}, performance=performance_of(k))
    assert source == "performance launch" and "128" in notes[-1]
    # no grid and none assumed: the check launch's counts, said to be NOT the performance launch's
    nogrid = Launch(None, (128, 1, 1), 0, {}, role=Role.PERFORMANCE)
    trips2, source2, notes2 = trip_counts_for(program, m, k.entry, check={"spec": k}, performance=nogrid)
    assert source2 == "interpreter" and "NOT the performance launch" in notes2[-1]
    assert trips != trips2


# ---------------------------------------------------------------------------
# matching PTX loops to SASS loops by structure


def test_match_loops_by_signature():
    from ptxopt.sim.trips import match_loops

    # ptxas split PTX loop 0 (8 global loads) into a 4-fold unrolled main loop and a remainder
    assert match_loops([(32, 0), (8, 0), (2, 0)], [(8, 0), (2, 0)]) == [(0, 4), (0, 1), (1, 1)]
    # unrolled 4-fold but kept one loop: a quarter of the iterations
    assert match_loops([(1, 0), (16, 0)], [(1, 0), (4, 0)]) == [(0, 1), (1, 4)]
    # PTX loop 1 fully unrolled by ptxas: no SASS loop for it
    assert match_loops([(1, 0), (3, 1)], [(1, 0), (5, 5), (3, 1)]) == [(0, 1), (2, 1)]
    with pytest.raises(ValueError, match="no structural match"):
        match_loops([(3, 0)], [(2, 0)])


def test_ptxas_split_and_unrolled_loops_get_their_trip_counts():
    """cuda_matmul_naive: the PTX K loop (unrolled 4x by nvcc, plus a remainder loop) becomes three SASS
    loops; by position its counts could not be matched and the model fell back to N=8 per loop. By
    structure the 16-load SASS loop runs K/16 = 128 times at K=2048; cuda_layernorm_row's 4-load loops
    were unrolled 4x again by ptxas (16 loads), one SASS iteration per 4 PTX ones."""
    from ptxopt.sim.sass_decode import decode
    from ptxopt.sim.trips import sass_loops
    from ptxopt.toolchain import compile_ptx, disassemble

    from dataclasses import replace

    k = get("cuda_matmul_naive")
    program = decode(disassemble(compile_ptx(k.ptx_text(), k.arch).cubin), k.entry)
    perf = performance_of(k)  # 2048^3; 256^3 here to keep the interpreter's slice run short
    perf = replace(perf, scalars={n: 256 for n in perf.scalars})
    trips, source, _ = trip_counts_for(program, parse(k.ptx_text()), k.entry, check={"spec": k},
                                       performance=perf)
    assert source == "performance launch"
    loops = sass_loops(program)
    assert len(loops) == 3 and trips[loops[0].key] == 256 // 16 - 1 and trips[loops[1].key] == 0

    k = get("cuda_layernorm_row")
    program = decode(disassemble(compile_ptx(k.ptx_text(), k.arch).cubin), k.entry)
    trips, source, notes = trip_counts_for(program, parse(k.ptx_text()), k.entry, check={"spec": k},
                                           performance=performance_of(k))
    assert " 4," in notes[-1]  # 4 PTX iterations of the 4-load loop per thread at n=4096, block 256
    loops = sass_loops(program)
    assert trips[loops[1].key] == 0  # ... = one SASS iteration of the 16-load loop: back edge never taken


def test_a_data_dependent_test_after_the_loops_does_not_stop_the_slice():
    """cuda_cross_entropy ends with a test on a loaded value (log of a denormal sum); no loop lies beyond
    it, so it becomes ``ret`` in the slice instead of refusing the whole kernel (before: SliceError and
    the check launch's counts, vocab 100 instead of 32000)."""
    from dataclasses import replace

    k = get("cuda_cross_entropy")
    perf = performance_of(k)
    perf = replace(perf, scalars={**perf.scalars, "cross_entropy_param_4": 3200})  # 32000 in the manifest
    prof = performance_loop_profile(parse(k.ptx_text()), k.entry, perf, spec=k)
    assert max(c.trips_per_entry for c in prof.counts) == 25  # 3200 logits / 32 lanes / nvcc's 4-fold unroll
