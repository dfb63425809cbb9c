"""Triton vector add, out = x + y, compiled twice.

``vector_add``: launched the way the Triton JIT would specialise it for
16-byte-aligned buffers and n % 16 == 0, so the loads come out as
``ld.global.v4.b32``.

``vector_add_nodiv``: the same kernel with no divisibility hints and a
ragged n (1000), what ``do_not_specialize_on_alignment`` gives: masked
scalar ``ld.global.b32`` per element, the input ptxopt's load
vectorisation pass is meant to improve.
"""

import triton
import triton.language as tl


@triton.jit
def vector_add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + y, mask=mask)


CORPUS = [
    dict(
        name="vector_add",
        performance=dict(
            grid=(65536, 1, 1),
            scalars={"n": 16777216},
            counts={"x_ptr": 16777216, "y_ptr": 16777216, "out_ptr": 16777216},
            problem="2^24 f32 elements, 256 per program",
        ),
        kernel=vector_add,
        family="elementwise",
        grid=(4, 1, 1),
        num_warps=4,
        constexprs={"BLOCK": 256},
        params=[
            ("x_ptr", "input", "f32", 1024),
            ("y_ptr", "input", "f32", 1024),
            ("out_ptr", "output", "f32", 1024),
            ("n", "scalar", "s32", 1024),
        ],
        shape={"n": 1024},
    ),
    dict(
        name="vector_add_nodiv",
        performance=dict(
            grid=(39063, 1, 1),
            scalars={"n": 10000000},
            counts={"x_ptr": 10000000, "y_ptr": 10000000, "out_ptr": 10000000},
            problem="10^7 f32 elements (ragged: not a multiple of 256), 256 per program",
        ),
        kernel=vector_add,
        family="elementwise",
        grid=(4, 1, 1),
        num_warps=4,
        divisibility=False,
        constexprs={"BLOCK": 256},
        params=[
            ("x_ptr", "input", "f32", 1000),
            ("y_ptr", "input", "f32", 1000),
            ("out_ptr", "output", "f32", 1000),
            ("n", "scalar", "s32", 1000),
        ],
        shape={"n": 1000},
        tags=["no-divisibility"],
    ),
]
