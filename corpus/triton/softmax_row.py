"""Triton row-wise softmax (the Triton tutorial's fused softmax, one row
per program).

8 rows x 200 columns; BLOCK = 256 is the next power of two, so the tail of
every row is masked with -inf.  Max and sum are tl.max / tl.sum across 4
warps, which Triton lowers to warp shuffles plus a shared-memory exchange.
"""

import triton
import triton.language as tl


@triton.jit
def softmax_row(x_ptr, y_ptr, x_stride, y_stride, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < cols
    x = tl.load(x_ptr + row * x_stride + offs, mask=mask, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    den = tl.sum(num, axis=0)
    tl.store(y_ptr + row * y_stride + offs, num / den, mask=mask)


CORPUS = [
    dict(
        name="softmax_row",
        performance=dict(
            grid=(65536, 1, 1),
            scalars={"x_stride": 200, "y_stride": 200, "cols": 200},
            counts={"x_ptr": 13107200, "y_ptr": 13107200},
            problem="65536 rows x 200 cols f32 (BLOCK=256 compiled in: at most 256 cols), one row per program",
        ),
        kernel=softmax_row,
        family="softmax",
        grid=(8, 1, 1),
        num_warps=4,
        constexprs={"BLOCK": 256},
        params=[
            ("x_ptr", "input", "f32", 1600),
            ("y_ptr", "output", "f32", 1600),
            ("x_stride", "scalar", "s32", 200),
            ("y_stride", "scalar", "s32", 200),
            ("cols", "scalar", "s32", 200),
        ],
        shape={"rows": 8, "cols": 200},
    ),
]
