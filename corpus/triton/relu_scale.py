"""Triton fused ReLU with a residual and a scale: out = relu(x) * alpha + res.

A typical fused elementwise epilogue (three streams in, one out).  n = 1000
is not a multiple of the block, so the last program is masked.
"""

import triton
import triton.language as tl


@triton.jit
def relu_scale(x_ptr, res_ptr, out_ptr, alpha, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    r = tl.load(res_ptr + offs, mask=mask)
    out = tl.maximum(x, 0.0) * alpha + r
    tl.store(out_ptr + offs, out, mask=mask)


CORPUS = [
    dict(
        name="relu_scale",
        performance=dict(
            grid=(65536, 1, 1),
            scalars={"alpha": 0.5, "n": 16777216},
            counts={"x_ptr": 16777216, "res_ptr": 16777216, "out_ptr": 16777216},
            problem="2^24 f32 elements, 256 per program",
        ),
        kernel=relu_scale,
        family="elementwise",
        grid=(4, 1, 1),
        num_warps=2,
        constexprs={"BLOCK": 256},
        params=[
            ("x_ptr", "input", "f32", 1000),
            ("res_ptr", "input", "f32", 1000),
            ("out_ptr", "output", "f32", 1000),
            ("alpha", "scalar", "f32", 0.5),
            ("n", "scalar", "s32", 1000),
        ],
        shape={"n": 1000},
        tags=["activation", "fused"],
    ),
]
