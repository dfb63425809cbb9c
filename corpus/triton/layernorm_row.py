"""Triton LayerNorm forward, one row per program (Triton tutorial style,
single block per row since the row fits).

8 rows x 512 columns.  Computes mean, the biased variance of (x - mean),
rstd = 1/sqrt(var + eps), y = (x - mean) * rstd * w + b, and saves mean and
rstd per row for the backward pass.
"""

import triton
import triton.language as tl


@triton.jit
def layernorm_row(x_ptr, y_ptr, w_ptr, b_ptr, mean_ptr, rstd_ptr, stride, cols, eps,
                  BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < cols
    x = tl.load(x_ptr + row * stride + offs, mask=mask, other=0.0)
    mean = tl.sum(x, axis=0) / cols
    xc = tl.where(mask, x - mean, 0.0)
    var = tl.sum(xc * xc, axis=0) / cols
    rstd = 1.0 / tl.sqrt(var + eps)
    w = tl.load(w_ptr + offs, mask=mask)
    b = tl.load(b_ptr + offs, mask=mask)
    tl.store(y_ptr + row * stride + offs, xc * rstd * w + b, mask=mask)
    tl.store(mean_ptr + row, mean)
    tl.store(rstd_ptr + row, rstd)


CORPUS = [
    dict(
        name="layernorm_row",
        performance=dict(
            grid=(32768, 1, 1),
            scalars={"stride": 512, "cols": 512, "eps": 1e-5},
            counts={"x_ptr": 16777216, "y_ptr": 16777216, "w_ptr": 512, "b_ptr": 512, "mean_ptr": 32768, "rstd_ptr": 32768},
            problem="32768 rows x 512 cols f32 (BLOCK=512 compiled in: at most 512 cols; 2^24 elements), one row per program",
        ),
        kernel=layernorm_row,
        family="normalization",
        grid=(8, 1, 1),
        num_warps=4,
        constexprs={"BLOCK": 512},
        params=[
            ("x_ptr", "input", "f32", 4096),
            ("y_ptr", "output", "f32", 4096),
            ("w_ptr", "input", "f32", 512),
            ("b_ptr", "input", "f32", 512),
            ("mean_ptr", "output", "f32", 8),
            ("rstd_ptr", "output", "f32", 8),
            ("stride", "scalar", "s32", 512),
            ("cols", "scalar", "s32", 512),
            ("eps", "scalar", "f32", 1e-5),
        ],
        shape={"rows": 8, "cols": 512},
    ),
]
