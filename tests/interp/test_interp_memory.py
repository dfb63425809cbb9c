"""Memory model: faults like the hardware (bounds, alignment of the whole
vector access, state space, read-only), messages that name the instruction,
thread and address; vector lane order, extension of narrow loads, generic
addressing and per-thread local memory."""

from __future__ import annotations

import re

import numpy as np
import pytest

from ptxopt.interp import MemoryFault, run_kernel
from ptxopt.interp.device_memory import GLOBAL_BASE
from ptxopt.interp.snippets import module
from ptxopt.ptx.parser import parse

P2 = ".param .u64 pa, .param .u64 pb"


def k(body, params=P2, extra=""):
    return module(body, params, extra=extra)


LOAD_V4 = """
	ld.param.u64 %rd1, [pa];
	ld.param.u64 %rd2, [pb];
	mov.u32 %r1, %tid.x;
	mul.wide.u32 %rd3, %r1, 16;
	add.s64 %rd4, %rd1, %rd3;
	ld.global.v4.f32 {%f1, %f2, %f3, %f4}, [%rd4+OFF];
	add.s64 %rd5, %rd2, %rd3;
	st.global.v4.f32 [%rd5], {%f4, %f3, %f2, %f1};
	ret;"""


def test_vector_load_lane_order():
    a = np.arange(16, dtype=np.float32)
    r = run_kernel(k(LOAD_V4.replace("OFF", "0")), "k", 1, 4, [a, np.zeros(16, np.float32)])
    assert r.buffers[1].reshape(4, 4).tolist() == a.reshape(4, 4)[:, ::-1].tolist()


def test_misaligned_v4_faults_with_location():
    m = k(LOAD_V4.replace("OFF", "4"))
    with pytest.raises(MemoryFault) as ei:
        run_kernel(m, "k", (1, 1, 1), (4, 1, 1), [np.zeros(32, np.float32), np.zeros(16, np.float32)])
    msg = str(ei.value)
    assert "misaligned 16-byte access" in msg
    assert "ld.global.v4.f32" in msg and re.search(r"line \d+", msg)
    assert "ctaid=(0,0,0) tid=(0,0,0)" in msg
    assert f"{GLOBAL_BASE + 4:#x}" in msg  # the first buffer starts at GLOBAL_BASE


def test_out_of_bounds_names_buffer_and_thread():
    m = k(LOAD_V4.replace("OFF", "0"))
    # 3 threads' worth of data for 4 threads: thread 3 reads past the end
    with pytest.raises(MemoryFault) as ei:
        run_kernel(m, "k", 1, 4, [np.zeros(12, np.float32), np.zeros(16, np.float32)])
    msg = str(ei.value)
    assert "out of bounds" in msg and "tid=(3,0,0)" in msg
    assert "past the end of global 'pa'" in msg


def test_null_and_wrong_space_and_readonly():
    body = """
	ld.param.u64 %rd1, [pa];
	ld.global.f32 %f1, [%rd1];
	ret;"""
    with pytest.raises(MemoryFault, match="below every buffer"):
        run_kernel(k(body), "k", 1, 1, [None, None])
    body = """
	.shared .align 4 .b8 sm[64];
	mov.u64 %rd1, sm;
	cvta.shared.u64 %rd2, %rd1;
	ld.global.f32 %f1, [%rd2];
	ret;"""
    with pytest.raises(MemoryFault, match=r"\.global access to shared memory \('sm'\)"):
        run_kernel(k(body), "k", 1, 1, [None, None])
    extra = ".const .align 4 .f32 table[4] = {1.0, 2.0, 3.0, 4.0};\n"
    body = """
	mov.u64 %rd1, table;
	cvta.const.u64 %rd2, %rd1;
	st.f32 [%rd2], %f1;
	ret;"""
    with pytest.raises(MemoryFault, match="store to read-only const memory"):
        run_kernel(k(body, extra=extra), "k", 1, 1, [None, None])


def test_shared_out_of_range_and_generic_roundtrip():
    body = """
	.shared .align 4 .b8 sm[16];
	ld.param.u64 %rd1, [pa];
	mov.u32 %r1, %tid.x;
	shl.b32 %r2, %r1, 2;
	mov.u32 %r3, sm;
	add.s32 %r4, %r3, %r2;
	cvt.rn.f32.u32 %f1, %r1;
	st.shared.f32 [%r4], %f1;
	bar.sync 0;
	cvt.u64.u32 %rd2, %r4;
	cvta.shared.u64 %rd3, %rd2;
	ld.f32 %f2, [%rd3];
	cvta.to.shared.u64 %rd4, %rd3;
	ld.shared.f32 %f3, [%rd4];
	add.f32 %f4, %f2, %f3;
	mul.wide.u32 %rd5, %r1, 4;
	add.s64 %rd6, %rd1, %rd5;
	st.global.f32 [%rd6], %f4;
	ret;"""
    r = run_kernel(k(body), "k", 1, 4, [np.zeros(4, np.float32), None])
    assert r.buffers[0].tolist() == [0.0, 2.0, 4.0, 6.0]
    with pytest.raises(MemoryFault, match=r"out of bounds.*\.shared address 0x10.*tid=\(4,0,0\)"):
        run_kernel(k(body), "k", 1, 5, [np.zeros(5, np.float32), None])


def test_narrow_loads_extend_and_stores_truncate():
    body = """
	ld.param.u64 %rd1, [pa];
	ld.param.u64 %rd2, [pb];
	ld.global.s8 %r1, [%rd1];
	ld.global.u8 %r2, [%rd1];
	st.global.u32 [%rd2], %r1;
	st.global.u32 [%rd2+4], %r2;
	mov.u32 %r3, 0x12345678;
	st.global.u8 [%rd2+8], %r3;
	st.global.u16 [%rd2+10], %r3;
	ret;"""
    r = run_kernel(k(body), "k", 1, 1, [np.array([0xF0], np.uint8), np.zeros(3, np.uint32)])
    out = r.buffers[1]
    assert out[0] == 0xFFFFFFF0 and out[1] == 0xF0
    assert out[2] & 0xFF == 0x78 and out[2] >> 16 == 0x5678


def test_local_memory_is_private_per_thread():
    body = """
	.local .align 4 .b8 __local_depot0[64];
	.reg .b64 %SP, %SPL;
	mov.u64 %SPL, __local_depot0;
	cvta.local.u64 %SP, %SPL;
	ld.param.u64 %rd1, [pa];
	mov.u32 %r1, %tid.x;
	mov.u32 %r2, 0;
$fill:
	mul.wide.u32 %rd2, %r2, 4;
	add.s64 %rd3, %SPL, %rd2;
	add.u32 %r3, %r1, %r2;
	st.local.u32 [%rd3], %r3;
	add.u32 %r2, %r2, 1;
	setp.lt.u32 %p1, %r2, 16;
	@%p1 bra $fill;
	mul.wide.u32 %rd4, %r1, 4;
	add.s64 %rd5, %SP, %rd4;
	ld.u32 %r4, [%rd5];
	add.s64 %rd6, %rd1, %rd4;
	st.global.u32 [%rd6], %r4;
	ret;"""
    r = run_kernel(k(body), "k", 1, 8, [np.zeros(8, np.uint32), None])
    assert r.buffers[0].tolist() == [2 * t for t in range(8)]  # thread t reads its own depot[t] = t + t


def test_kernel_params_are_read_only_and_addressable():
    body = """
	mov.u64 %rd1, pa;
	ld.param.u64 %rd2, [%rd1];
	ld.param.u64 %rd3, [pb];
	st.global.u64 [%rd2], %rd3;
	ret;"""
    out = np.zeros(1, np.uint64)
    r = run_kernel(k(body), "k", 1, 1, [out, 0x1234])
    assert r.buffers[0].tolist() == [0x1234]
    bad = "\tst.param.u64 [pa], %rd1;\n\tret;"
    with pytest.raises(MemoryFault, match="read-only"):
        run_kernel(k(bad), "k", 1, 1, [out, 0])


def test_cp_async_lands_at_wait_and_zero_fills():
    body = """
	.shared .align 16 .b8 sm[32];
	ld.param.u64 %rd1, [pa];
	ld.param.u64 %rd2, [pb];
	mov.u32 %r1, sm;
	st.shared.u32 [%r1], 5;
	st.shared.u32 [%r1+16], 6;
	cp.async.ca.shared.global [%r1], [%rd1], 4;
	mov.u32 %r9, 0;
	cp.async.ca.shared.global [%r1+16], [%rd2], 8, %r9;
	cp.async.commit_group;
	ld.shared.u32 %r2, [%r1];
	cp.async.wait_group 0;
	ld.shared.u32 %r3, [%r1];
	ld.shared.u32 %r4, [%r1+16];
	st.global.u32 [%rd1+4], %r2;
	st.global.u32 [%rd1+8], %r3;
	st.global.u32 [%rd1+12], %r4;
	ret;"""
    a = np.array([42, 0, 0, 0], np.uint32)
    r = run_kernel(k(body), "k", 1, 1, [a, None])  # src-size 0: the null source is never read
    assert r.buffers[0].tolist() == [42, 5, 42, 0]  # stale before the wait, copied after, zero-filled


MATRIX_KERNEL = """.version 8.8
.target sm_90
.address_size 64

.visible .entry k(.param .u64 out, .param .u64 back)
{
	.reg .b32 %r<24>;
	.reg .b64 %rd<8>;
	.shared .align 16 .b8 sm[512];
	ld.param.u64 %rd1, [out];
	ld.param.u64 %rd2, [back];
	mov.u32 %r1, %tid.x;
	// register i of lane l holds the b16 pair (8l + 2i, 8l + 2i + 1)
	shl.b32 %r2, %r1, 3;
	add.u32 %r3, %r2, 1;
	shl.b32 %r3, %r3, 16;
	or.b32 %r10, %r2, %r3;
	add.u32 %r11, %r10, 131074;
	add.u32 %r12, %r10, 262148;
	add.u32 %r13, %r10, 393222;
	// lane l gives the address of row l % 8 of matrix l / 8
	mov.u32 %r4, sm;
	shl.b32 %r5, %r1, 4;
	add.u32 %r6, %r4, %r5;
	stmatrix.sync.aligned.m8n8.x4{trans}.shared.b16 [%r6], {%r10, %r11, %r12, %r13};
	bar.sync 0;
	ld.shared.v4.b32 {%r14, %r15, %r16, %r17}, [%r6];
	cvt.u64.u32 %rd3, %r5;
	add.u64 %rd4, %rd1, %rd3;
	st.global.v4.b32 [%rd4], {%r14, %r15, %r16, %r17};
	ldmatrix.sync.aligned.m8n8.x4{trans}.shared.b16 {%r18, %r19, %r20, %r21}, [%r6];
	add.u64 %rd5, %rd2, %rd3;
	st.global.v4.b32 [%rd5], {%r18, %r19, %r20, %r21};
	ret;
}
"""


@pytest.mark.parametrize("trans", ["", ".trans"])
def test_stmatrix_layout_and_ldmatrix_round_trip(trans):
    """stmatrix puts lane l's register i at row l/4, columns 2(l%4) and
    2(l%4)+1 of matrix i (transposed with .trans); ldmatrix reads it back."""
    out = np.zeros(256, np.uint16)
    back = np.zeros(256, np.uint16)
    r = run_kernel(parse(MATRIX_KERNEL.replace("{trans}", trans)), "k", 1, 32, [out, back])
    stored = r.buffers[0].reshape(4, 8, 8)  # matrix, row, column

    def val(lane, i, half):
        return lane * 8 + 2 * i + half

    for i in range(4):
        for row in range(8):
            for col in range(8):
                lane, half = (col * 4 + row // 2, row % 2) if trans else (row * 4 + col // 2, col % 2)
                assert stored[i, row, col] == val(lane, i, half), (i, row, col)
    want = np.array([val(lane, i, h) for lane in range(32) for i in range(4) for h in range(2)], np.uint16)
    np.testing.assert_array_equal(r.buffers[1], want)


def test_byte_mask_initialisers_hold_the_bytes_of_an_address():
    """``0xff00(foo)`` is byte 1 of foo's address; ``generic(foo)`` the same for a global."""
    masks = ", ".join(f"{0xFF << (8 * k):#x}(foo)" for k in range(8))
    text = f""".version 8.8
.target sm_89
.address_size 64
.global .align 8 .u64 foo;
.global .align 1 .u8 b[8] = {{{masks}}};
.global .align 1 .u8 g[2] = {{0xff(generic(foo)), 0xff00(generic(foo))}};

.visible .entry k(.param .u64 out)
{{
	.reg .b16 %h<2>;
	.reg .b64 %rd<4>;
	ld.param.u64 %rd1, [out];
	mov.u64 %rd2, foo;
	st.global.u64 [%rd1], %rd2;
	ld.global.u64 %rd3, [b];
	st.global.u64 [%rd1+8], %rd3;
	ld.global.u16 %h1, [g];
	st.global.u16 [%rd1+16], %h1;
	ret;
}}
"""
    out = run_kernel(parse(text), "k", 1, 1, [np.zeros(3, np.uint64)]).buffers[0]
    assert out[0] != 0 and out[1] == out[0]  # b is foo's address, byte by byte
    assert int(out[2]) & 0xFFFF == int(out[0]) & 0xFFFF
