"""Control flow and synchronisation: divergence and reconvergence, barriers
(and the errors for divergent arrival), warp shuffles and votes, atomics in
deterministic thread order, calls with .param passing, recursion, limits."""

from __future__ import annotations

import numpy as np
import pytest

from ptxopt.interp import (BarrierError, KernelTrap, StepLimit, UnsupportedInstruction, WarpSyncError,
                           run_kernel)
from ptxopt.interp.snippets import module

OUT = ".param .u64 pout"
STORE = """
	ld.param.u64 %rd1, [pout];
	mov.u32 %r1, %tid.x;
	mul.wide.u32 %rd2, %r1, 4;
	add.s64 %rd3, %rd1, %rd2;
"""


def run(body, threads, n=None, dtype=np.uint32, extra="", grid=1):
    m = module(STORE + body, OUT, extra=extra)
    return run_kernel(m, "k", grid, threads, [np.zeros(n or threads, dtype)]).buffers[0]


def test_if_else_divergence():
    body = """
	and.b32 %r2, %r1, 1;
	setp.eq.u32 %p1, %r2, 0;
	@%p1 bra $even;
	mul.lo.u32 %r3, %r1, 3;
	bra.uni $join;
$even:
	add.u32 %r3, %r1, 100;
$join:
	add.u32 %r3, %r3, 1;
	st.global.u32 [%rd3], %r3;
	ret;"""
    out = run(body, 8)
    assert out.tolist() == [t + 101 if t % 2 == 0 else 3 * t + 1 for t in range(8)]


def test_loop_with_per_thread_trip_count_then_shuffle_reconverges():
    # thread t loops t times; after the loop all 32 lanes must be converged
    # again for the full-mask shuffle to be legal
    body = """
	mov.u32 %r2, 0;
	mov.u32 %r3, 0;
	setp.eq.u32 %p1, %r1, 0;
	@%p1 bra $done;
$loop:
	add.u32 %r3, %r3, %r2;
	add.u32 %r2, %r2, 1;
	setp.lt.u32 %p2, %r2, %r1;
	@%p2 bra $loop;
$done:
	shfl.sync.bfly.b32 %r4, %r3, 1, 31, -1;
	st.global.u32 [%rd3], %r4;
	ret;"""
    out = run(body, 32)
    tri = [t * (t - 1) // 2 for t in range(32)]
    assert out.tolist() == [tri[t ^ 1] for t in range(32)]


def test_barrier_shared_reduction_multi_cta_order():
    body = """
	.shared .align 4 .b8 buf[1024];
	mov.u32 %r5, buf;
	shl.b32 %r6, %r1, 2;
	add.u32 %r7, %r5, %r6;
	st.shared.u32 [%r7], %r1;
	bar.sync 0;
	mov.u32 %r8, 128;
$step:
	setp.ge.u32 %p1, %r1, %r8;
	@%p1 bra $skip;
	shl.b32 %r9, %r8, 2;
	add.u32 %r10, %r7, %r9;
	ld.shared.u32 %r11, [%r10];
	ld.shared.u32 %r12, [%r7];
	add.u32 %r12, %r12, %r11;
	st.shared.u32 [%r7], %r12;
$skip:
	bar.sync 0;
	shr.u32 %r8, %r8, 1;
	setp.ne.u32 %p2, %r8, 0;
	@%p2 bra $step;
	ld.shared.u32 %r13, [%r5];
	st.global.u32 [%rd3], %r13;
	ret;"""
    out = run(body, 256)
    assert (out == sum(range(256))).all()


def test_early_exit_before_barrier_is_allowed():
    body = """
	setp.ge.u32 %p1, %r1, 16;
	@%p1 ret;
	bar.sync 0;
	st.global.u32 [%rd3], %r1;
	ret;"""
    out = run(body, 32)
    assert out[:16].tolist() == list(range(16))


def test_divergent_barriers_are_errors():
    body = """
	setp.ge.u32 %p1, %r1, 16;
	@%p1 bra $other;
	bar.sync 0;
	bra.uni $end;
$other:
	bar.sync 0;
$end:
	ret;"""
    with pytest.raises(BarrierError, match="different barriers"):
        run(body, 32)
    body = """
	setp.ge.u32 %p1, %r1, 16;
	@%p1 bra $spin;
	bar.sync 0;
	ret;
$spin:
	shfl.sync.idx.b32 %r2, %r1, 0, 31, -1;
	ret;"""
    with pytest.raises(BarrierError, match="deadlock|only 16 of 32"):
        run(body, 32)


def test_barrier_in_partial_warp_group_never_completes():
    body = """
	setp.lt.u32 %p1, %r1, 8;
	@%p1 bra $wait;
$loop:
	bra.uni $loop;
$wait:
	bar.sync 0;
	ret;"""
    with pytest.raises(StepLimit):
        m = module(STORE + body, OUT)
        run_kernel(m, "k", 1, 32, [np.zeros(32, np.uint32)], max_steps=2000)


def test_divergent_shuffle_is_an_error():
    body = """
	setp.lt.u32 %p1, %r1, 16;
	@%p1 bra $a;
	ret;
$a:
	shfl.sync.down.b32 %r2, %r1, 1, 31, -1;
	st.global.u32 [%rd3], %r2;
	ret;"""
    out = run(body, 32)  # lanes 16..31 exited: non-exited members are all present
    assert out[:16].tolist() == [t + 1 for t in range(16)]
    body = """
	setp.lt.u32 %p1, %r1, 16;
	@%p1 bra $a;
	bar.warp.sync -1;
	ret;
$a:
	shfl.sync.down.b32 %r2, %r1, 1, 31, -1;
	ret;"""
    with pytest.raises(WarpSyncError, match="lanes of their warp"):
        run(body, 32)


@pytest.mark.parametrize("mode,b,c,expect", [
    ("up", 1, 0, lambda t: t - 1 if t % 32 >= 1 else t),
    ("down", 2, 31, lambda t: t + 2 if t % 32 <= 29 else t),
    ("bfly", 5, 31, lambda t: t ^ 5),
    ("idx", 7, 31, lambda t: (t // 32) * 32 + 7),
    ("idx", 3, 0x181F, lambda t: (t // 8) * 8 + 3),   # width 8 segments: c = ((32-8)<<8)|31
    ("down", 1, 0x181F, lambda t: t + 1 if t % 8 != 7 else t),
    ("up", 2, 0x1800, lambda t: t - 2 if t % 8 >= 2 else t),
])
def test_shuffle_modes(mode, b, c, expect):
    body = f"""
	shfl.sync.{mode}.b32 %r2|%p1, %r1, {b}, {c}, -1;
	selp.u32 %r3, 1000, 0, %p1;
	add.u32 %r4, %r2, %r3;
	st.global.u32 [%rd3], %r4;
	ret;"""
    out = run(body, 64)
    for t in range(64):
        src = expect(t)
        assert out[t] % 1000 == src, (t, out[t])
        assert (out[t] >= 1000) == (src != t or mode in ("bfly", "idx")), t


def test_vote_modes():
    body = """
	setp.lt.u32 %p1, %r1, 5;
	vote.sync.ballot.b32 %r2, %p1, -1;
	vote.sync.any.pred %p2, %p1, -1;
	vote.sync.all.pred %p3, %p1, -1;
	vote.sync.uni.pred %p4, %p1, -1;
	selp.u32 %r3, 1, 0, %p2;
	selp.u32 %r4, 2, 0, %p3;
	selp.u32 %r5, 4, 0, %p4;
	or.b32 %r6, %r3, %r4;
	or.b32 %r6, %r6, %r5;
	st.global.u32 [%rd3], %r2;
	st.global.u32 [%rd3+256], %r6;
	ret;"""
    out = run(body, 64, n=128)
    assert out[:32].tolist() == [0b11111] * 32 and out[32:64].tolist() == [0] * 32
    assert out[64:96].tolist() == [1] * 32  # any, not all, not uniform
    assert out[96:128].tolist() == [4] * 32  # none true: not any, not all, uniform


def test_atomics_in_thread_order():
    body = """
	ld.param.u64 %rd4, [pout];
	atom.global.add.u32 %r2, [%rd4+512], %r1;
	st.global.u32 [%rd3], %r2;
	ret;"""
    out = run(body, 100, n=129)
    # thread t sees the sum of all lower threads (ascending order per address)
    assert out[:100].tolist() == [t * (t - 1) // 2 for t in range(100)]
    assert out[128] == sum(range(100))


def test_atomic_float_add_order_and_cas_exch_inc():
    vals = np.random.default_rng(0).standard_normal(64).astype(np.float32)
    m = module("""
	ld.param.u64 %rd1, [pin];
	ld.param.u64 %rd2, [pout];
	mov.u32 %r1, %tid.x;
	mul.wide.u32 %rd3, %r1, 4;
	add.s64 %rd4, %rd1, %rd3;
	ld.global.f32 %f1, [%rd4];
	red.global.add.f32 [%rd2], %f1;
	atom.global.cas.b32 %r2, [%rd2+4], 0, %r1;
	atom.global.exch.b32 %r3, [%rd2+8], %r1;
	atom.global.inc.u32 %r4, [%rd2+12], 9;
	atom.global.max.s32 %r5, [%rd2+16], %r1;
	ret;""", ".param .u64 pin, .param .u64 pout")
    out = run_kernel(m, "k", 1, 64, [vals, np.zeros(5, np.uint32)]).buffers[1]
    acc = np.float32(0)
    for v in vals:
        acc = np.float32(acc + v)
    assert out.view(np.float32)[0] == acc
    assert out[1] == 1  # thread 0 swaps 0 for 0, thread 1 swaps 0 for 1, the rest fail
    assert out[2] == 63 and out[3] == 64 % 10 and out[4] == 63


def test_shared_atomics_histogram():
    body = """
	.shared .align 4 .b8 bins[16];
	mov.u32 %r5, bins;
	and.b32 %r6, %r1, 3;
	shl.b32 %r7, %r6, 2;
	add.u32 %r8, %r5, %r7;
	setp.lt.u32 %p1, %r1, 4;
	@%p1 st.shared.u32 [%r8], 0;
	bar.sync 0;
	atom.shared.add.u32 %r9, [%r8], 1;
	bar.sync 0;
	ld.shared.u32 %r10, [%r8];
	st.global.u32 [%rd3], %r10;
	ret;"""
    assert (run(body, 128) == 32).all()


CALLEE = """
.func (.param .b32 ret0) twice_plus(.param .b32 a, .param .b32 b)
{
	.reg .b32 %t<4>;
	ld.param.b32 %t1, [a];
	ld.param.b32 %t2, [b];
	shl.b32 %t3, %t1, 1;
	add.s32 %t3, %t3, %t2;
	st.param.b32 [ret0], %t3;
	ret;
}

.func (.param .b32 fret) fact(.param .b32 n)
{
	.reg .b32 %n<4>;
	.reg .pred %q;
	ld.param.b32 %n1, [n];
	setp.le.s32 %q, %n1, 1;
	@%q bra $base;
	add.s32 %n2, %n1, -1;
	{
	.param .b32 p0;
	st.param.b32 [p0], %n2;
	.param .b32 r0;
	call.uni (r0), fact, (p0);
	ld.param.b32 %n3, [r0];
	}
	mul.lo.s32 %n3, %n3, %n1;
	st.param.b32 [fret], %n3;
	ret;
$base:
	st.param.b32 [fret], 1;
	ret;
}
"""


def test_calls_pass_params_and_recurse():
    body = """
	and.b32 %r9, %r1, 7;
	setp.lt.u32 %p1, %r1, 4;
	@%p1 bra $small;
	{
	.param .b32 param0;
	st.param.b32 [param0], %r1;
	.param .b32 param1;
	st.param.b32 [param1], 7;
	.param .b32 retval0;
	call.uni (retval0), twice_plus, (param0, param1);
	ld.param.b32 %r2, [retval0];
	}
	bra.uni $store;
$small:
	{
	.param .b32 param0;
	st.param.b32 [param0], %r9;
	.param .b32 retval0;
	call.uni (retval0), fact, (param0);
	ld.param.b32 %r2, [retval0];
	}
$store:
	st.global.u32 [%rd3], %r2;
	ret;"""
    out = run(body, 8, extra=CALLEE)
    assert out.tolist() == [1, 1, 2, 6] + [2 * t + 7 for t in range(4, 8)]


def test_limits_trap_and_unsupported():
    with pytest.raises(StepLimit, match="step limit"):
        m = module(STORE + "$l:\n\tbra.uni $l;", OUT)
        run_kernel(m, "k", 1, 1, [np.zeros(1, np.uint32)], max_steps=500)
    with pytest.raises(KernelTrap, match="trap"):
        run(STORE and "\ttrap;\n\tret;", 1)
    body = """
	setp.eq.u32 %p1, %r1, 5;
	@!%p1 bra $fine;
	tex.1d.v4.f32.s32 {%f1, %f2, %f3, %f4}, [tex0, {%r1}];
$fine:
	ret;"""
    run(body, 4)  # never reached: no error
    with pytest.raises(UnsupportedInstruction, match=r"line \d+: tex\.1d"):
        run(body, 8)


def test_clock_is_monotone():
    body = """
	mov.u64 %rd5, %clock64;
	add.u32 %r2, %r1, 1;
	mov.u64 %rd6, %clock64;
	setp.gt.u64 %p1, %rd6, %rd5;
	selp.u32 %r3, 1, 0, %p1;
	st.global.u32 [%rd3], %r3;
	ret;"""
    assert run(body, 4).tolist() == [1] * 4


@pytest.mark.parametrize("schedule", ["lockstep", "warps", "warps-reversed"])
def test_named_barriers_with_counts(schedule):
    # warp 0 produces into shared memory and warp 1 consumes after a 64-thread
    # named barrier met at two different instructions; warp 2 uses another one
    body = """
	.shared .align 4 .b8 box[128];
	mov.u32 %r5, box;
	shr.u32 %r6, %r1, 5;
	and.b32 %r7, %r1, 31;
	shl.b32 %r8, %r7, 2;
	add.u32 %r9, %r5, %r8;
	setp.eq.u32 %p1, %r6, 0;
	@%p1 bra $producer;
	setp.eq.u32 %p2, %r6, 1;
	@%p2 bra $consumer;
	bar.sync 2, 32;
	st.global.u32 [%rd3], 7;
	ret;
$producer:
	mul.lo.u32 %r10, %r7, 10;
	st.shared.u32 [%r9], %r10;
	bar.sync 1, 64;
	st.global.u32 [%rd3], 1;
	ret;
$consumer:
	bar.sync 1, 64;
	ld.shared.u32 %r11, [%r9];
	st.global.u32 [%rd3], %r11;
	ret;"""
    m = module(STORE + body, OUT)
    out = run_kernel(m, "k", 1, 96, [np.zeros(96, np.uint32)], schedule=schedule).buffers[0]
    assert out[:32].tolist() == [1] * 32
    assert out[32:64].tolist() == [10 * t for t in range(32)]
    assert out[64:].tolist() == [7] * 32


def test_scope_lookups_see_later_declarations():
    """The per-scope lookup memo is invalidated by any declaration in the
    function's scope tree (a miss, then a declaration, then a hit)."""
    from ptxopt.interp.decode import Scope
    from ptxopt.ptx.ir import Decl, DeclItem

    root = Scope(None)
    inner = Scope(root)
    assert inner.lookup("%r3") is None and root.lookup("%r3") is None
    root.declare(Decl((".reg", ".b32"), (DeclItem("%r", 4),)))
    assert inner.lookup("%r3") == ((root.id, "%r3"), "b32")
    assert inner.lookup("%r4") is None  # outside %r<4>
    inner.declare(Decl((".reg", ".f32"), (DeclItem("%r3"),)))
    assert inner.lookup("%r3") == ((inner.id, "%r3"), "f32") and root.lookup("%r3")[1] == "b32"
    other = Scope(None)  # another function's tree is not affected
    assert other.lookup("%r3") is None
