"""Triton block reductions: per-program partial sum and partial max.

Each of the 4 programs reduces BLOCK = 512 contiguous elements with
tl.sum / tl.max and writes one partial; the host (or a second launch)
finishes.  ``reduce_max`` masks with -inf and is compiled without
divisibility hints on a ragged n.
"""

import triton
import triton.language as tl


@triton.jit
def reduce_sum(x_ptr, partial_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.store(partial_ptr + pid, tl.sum(x, axis=0))


@triton.jit
def reduce_max(x_ptr, partial_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=-float("inf"))
    tl.store(partial_ptr + pid, tl.max(x, axis=0))


CORPUS = [
    dict(
        name="reduce_sum",
        performance=dict(
            grid=(32768, 1, 1),
            scalars={"n": 16777216},
            counts={"x_ptr": 16777216, "partial_ptr": 32768},
            problem="sum of 2^24 f32 elements to 32768 partials, 512 per program",
        ),
        kernel=reduce_sum,
        family="reduction",
        grid=(4, 1, 1),
        num_warps=4,
        constexprs={"BLOCK": 512},
        params=[
            ("x_ptr", "input", "f32", 2048),
            ("partial_ptr", "output", "f32", 4),
            ("n", "scalar", "s32", 2048),
        ],
        shape={"n": 2048},
    ),
    dict(
        name="reduce_max",
        performance=dict(
            grid=(19532, 1, 1),
            scalars={"n": 10000000},
            counts={"x_ptr": 10000000, "partial_ptr": 19532},
            problem="max of 10^7 f32 elements (ragged: not a multiple of 512) to 19532 partials, 512 per program",
        ),
        kernel=reduce_max,
        family="reduction",
        grid=(4, 1, 1),
        num_warps=4,
        divisibility=False,
        constexprs={"BLOCK": 512},
        params=[
            ("x_ptr", "input", "f32", 2000),
            ("partial_ptr", "output", "f32", 4),
            ("n", "scalar", "s32", 2000),
        ],
        shape={"n": 2000},
        tags=["no-divisibility"],
    ),
]
