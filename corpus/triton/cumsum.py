"""Triton block-level inclusive prefix sum with tl.cumsum.

Each of the 4 programs scans its 256 elements and writes the block total,
the first level of a multi-block scan.  Triton lowers tl.cumsum to
warp-shuffle scans combined through shared memory.
"""

import triton
import triton.language as tl


@triton.jit
def cumsum(x_ptr, out_ptr, block_sums_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    s = tl.cumsum(x, axis=0)
    tl.store(out_ptr + offs, s, mask=mask)
    tl.store(block_sums_ptr + pid, tl.sum(x, axis=0))


CORPUS = [
    dict(
        name="cumsum",
        performance=dict(
            grid=(65536, 1, 1),
            scalars={"n": 16777216},
            counts={"x_ptr": 16777216, "out_ptr": 16777216, "block_sums_ptr": 65536},
            problem="block-wise scan of 2^24 f32 elements, 256 per program",
        ),
        kernel=cumsum,
        family="scan",
        grid=(4, 1, 1),
        num_warps=4,
        constexprs={"BLOCK": 256},
        params=[
            ("x_ptr", "input", "f32", 1024),
            ("out_ptr", "output", "f32", 1024),
            ("block_sums_ptr", "output", "f32", 4),
            ("n", "scalar", "s32", 1024),
        ],
        shape={"n": 1024},
    ),
]
