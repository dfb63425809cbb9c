"""Loop analysis (ptxopt.analysis.loops): natural loops, nesting, induction
variables, trip counts, carried dependences, uniformity -- on hand-written
kernels and on corpus kernels."""

import json

import pytest

from ptxopt.kernels import corpus
from ptxopt import parse
from ptxopt.analysis.loops import loops_of

HEAD = ".version 8.0\n.target sm_89\n.address_size 64\n"


def kernel(body: str, params: str = ".param .u64 p_a, .param .u32 p_n") -> str:
    return (HEAD + f".visible .entry k({params})\n{{\n"
            "\t.reg .pred %p<8>;\n\t.reg .b32 %r<40>;\n\t.reg .b64 %rd<20>;\n\t.reg .f32 %f<10>;\n"
            + body + "\n}\n")


def info(text: str):
    fn = parse(text).entries[0]
    return loops_of(fn)


CONST_LOOP = """
	ld.param.u64 %rd1, [p_a];
	mov.u32 %r1, 0;
	mov.f32 %f1, 0f00000000;
L_top:
	mul.wide.u32 %rd2, %r1, 4;
	add.s64 %rd3, %rd1, %rd2;
	ld.global.f32 %f2, [%rd3];
	add.f32 %f1, %f1, %f2;
	add.s32 %r1, %r1, {step};
	setp.lt.u32 %p1, %r1, {bound};
	@%p1 bra L_top;
	st.global.f32 [%rd1], %f1;
	ret;
"""


@pytest.mark.parametrize("step, bound, trips", [(1, 8, 8), (2, 8, 4), (3, 8, 3), (1, 1, 1), (1, 0, 1)])
def test_constant_trip_count(step, bound, trips):
    cfg, li = info(kernel(CONST_LOOP.format(step=step, bound=bound)))
    (lp,) = li.loops
    assert lp.trip.kind == "constant" and lp.trip.value == trips
    (iv,) = [iv for iv in lp.ivs if iv.reg == "%r1"]
    assert iv.init.const == 0 and iv.step.const == step
    assert lp.uniform and lp.depth == 1
    assert "%f1" in lp.carried_regs and "%r1" in lp.carried_regs


def test_down_counting_loop_with_exit_branch():
    body = """
	mov.u32 %r1, 10;
L_top:
	sub.s32 %r1, %r1, 2;
	setp.eq.s32 %p1, %r1, 0;
	@%p1 bra L_done;
	bra.uni L_top;
L_done:
	ret;
"""
    _, li = info(kernel(body))
    (lp,) = li.loops
    assert lp.ivs[0].step.const == -2
    assert lp.trip.kind == "constant" and lp.trip.value == 5


def test_parameter_trip_count_is_uniform():
    body = """
	ld.param.u32 %r9, [p_n];
	mov.u32 %r1, 0;
L_top:
	add.s32 %r1, %r1, 1;
	setp.lt.s32 %p1, %r1, %r9;
	@%p1 bra L_top;
	ret;
"""
    _, li = info(kernel(body))
    (lp,) = li.loops
    assert lp.trip.kind == "parametric" and lp.trip.params == ("p_n",)
    assert lp.uniform


def test_tid_dependent_bound_is_not_uniform():
    body = """
	ld.param.u32 %r9, [p_n];
	mov.u32 %r8, %tid.x;
	add.s32 %r9, %r9, %r8;
	mov.u32 %r1, 0;
L_top:
	add.s32 %r1, %r1, 1;
	setp.lt.s32 %p1, %r1, %r9;
	@%p1 bra L_top;
	ret;
"""
    _, li = info(kernel(body))
    (lp,) = li.loops
    assert lp.trip.kind == "parametric"
    assert not lp.uniform


def test_tid_dependent_start_is_not_uniform():
    body = """
	ld.param.u32 %r9, [p_n];
	mov.u32 %r1, %tid.x;
L_top:
	add.s32 %r1, %r1, 32;
	setp.lt.s32 %p1, %r1, %r9;
	@%p1 bra L_top;
	ret;
"""
    _, li = info(kernel(body))
    (lp,) = li.loops
    assert not lp.uniform


def test_nested_loops():
    body = """
	mov.u32 %r1, 0;
L_outer:
	mov.u32 %r2, 0;
L_inner:
	add.s32 %r2, %r2, 1;
	setp.lt.u32 %p2, %r2, 4;
	@%p2 bra L_inner;
	add.s32 %r1, %r1, 1;
	setp.lt.u32 %p1, %r1, 3;
	@%p1 bra L_outer;
	ret;
"""
    cfg, li = info(kernel(body))
    outer, inner = li.loops
    assert cfg.blocks[outer.header].label == "L_outer" and outer.depth == 1
    assert cfg.blocks[inner.header].label == "L_inner" and inner.depth == 2
    assert inner.blocks < outer.blocks
    assert li.loops[inner.parent] is outer
    assert outer.trip.value == 3 and inner.trip.value == 4


def test_while_loop_without_induction_variable():
    body = """
	ld.param.u64 %rd1, [p_a];
L_top:
	ld.global.u32 %r1, [%rd1];
	setp.ne.s32 %p1, %r1, 0;
	@%p1 bra L_top;
	ret;
"""
    _, li = info(kernel(body))
    (lp,) = li.loops
    assert lp.ivs == ()
    assert lp.trip.kind == "unknown"
    assert not lp.uniform  # the loaded value may differ between threads


def test_update_on_one_path_only_is_no_induction_variable():
    body = """
	ld.param.u32 %r9, [p_n];
	mov.u32 %r1, 0;
	mov.u32 %r3, %tid.x;
L_top:
	setp.eq.s32 %p2, %r3, 0;
	@%p2 bra L_skip;
	add.s32 %r1, %r1, 1;
L_skip:
	add.s32 %r4, %r4, 1;
	setp.lt.s32 %p1, %r1, %r9;
	@%p1 bra L_top;
	ret;
"""
    _, li = info(kernel(body))
    (lp,) = li.loops
    assert "%r1" not in {iv.reg for iv in lp.ivs}
    assert lp.trip.kind == "unknown" and not lp.uniform


def test_memory_carried_dependence_and_barrier():
    body = """
	ld.param.u64 %rd1, [p_a];
	mov.u32 %r1, 0;
L_top:
	ld.global.f32 %f1, [%rd1];
	add.f32 %f1, %f1, 0f3F800000;
	st.global.f32 [%rd1+4], %f1;
	bar.sync 0;
	add.s32 %r1, %r1, 1;
	setp.lt.u32 %p1, %r1, 16;
	@%p1 bra L_top;
	ret;
"""
    _, li = info(kernel(body))
    (lp,) = li.loops
    assert lp.carried_mem and lp.barriers and lp.uniform and lp.trip.value == 16


def test_no_loop():
    _, li = info(kernel("\tret;"))
    assert li.loops == []


# -- corpus -------------------------------------------------------------------


def _loops(kernel_id):
    fn = parse(corpus.get(kernel_id).ptx_text()).entries[0]
    return loops_of(fn)


@pytest.mark.parametrize("kid", ["gemm_tile_2x2x2", "gemm_tile_8x8x8", "gemm_tile_16x16x16"])
def test_gemm_tiles_are_unrolled(kid):
    assert _loops(kid)[1].loops == []


def test_saxpy_grid_stride_loop():
    _, li = _loops("cuda_saxpy")
    (lp,) = li.loops
    assert [iv.reg for iv in lp.ivs] == ["%r10"]
    assert lp.trip.kind == "parametric" and lp.trip.params == ("saxpy_param_0",)
    assert not lp.uniform  # starts at the thread's global index


def test_triton_matmul_k_loop():
    cfg, li = _loops("triton_matmul_f16")
    (lp,) = li.loops
    assert "%r142" in {iv.reg for iv in lp.ivs}
    assert lp.trip.kind == "parametric" and lp.trip.params == ("matmul_f16_param_5",)
    assert lp.uniform and lp.barriers


def test_stats_reports_loops(tmp_path):
    from click.testing import CliRunner

    from ptxopt.cli import cli

    r = CliRunner().invoke(cli, ["stats", "--json", str(corpus.get("cuda_saxpy").ptx_path)])
    assert r.exit_code == 0, r.output
    loops = json.loads(r.output)["entries"]["saxpy"]["loops"]
    assert loops["count"] == 1
    assert loops["loops"][0]["trip_count"] == {"kind": "parametric", "value": None,
                                               "params": ["saxpy_param_0"], "why": ""}
    r = CliRunner().invoke(cli, ["stats", str(corpus.get("cuda_saxpy").ptx_path)])
    assert r.exit_code == 0 and "loop $L__BB0_2" in r.output and "not uniform" in r.output


def test_complement_predicate_is_not_the_test():
    """``setp.lt %p1|%p2``: %p2 is the complement; a branch on it is not the
    comparison (a wrong polarity would give a wrong constant trip count)."""
    body = """
	mov.u32 %r1, 0;
L_top:
	add.s32 %r1, %r1, 1;
	setp.ge.u32 %p1|%p2, %r1, 8;
	@%p2 bra L_top;
	ret;
"""
    _, li = info(kernel(body))
    assert li.loops[0].trip.kind == "unknown"


def test_saturating_add_is_no_induction_variable():
    body = """
	mov.u32 %r1, 0;
L_top:
	add.sat.s32 %r1, %r1, 1;
	setp.lt.s32 %p1, %r1, 8;
	@%p1 bra L_top;
	ret;
"""
    _, li = info(kernel(body))
    assert li.loops[0].ivs == () and li.loops[0].trip.kind == "unknown"
