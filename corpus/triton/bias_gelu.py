"""Triton fused bias + GELU (tanh approximation) over a 2D activation.

out[r, c] = gelu(x[r, c] + bias[c]) for a 16 x 128 row-major tensor: the
epilogue an MLP's first linear layer is usually fused with.  The column
index is ``offs % cols``, so the bias load is a small reused gather.
tanh comes from libdevice (``__nv_tanhf``, inlined into the PTX).
"""

import triton
import triton.language as tl
from triton.language.extra import libdevice


@triton.jit
def bias_gelu(x_ptr, bias_ptr, out_ptr, n, cols, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    b = tl.load(bias_ptr + offs % cols, mask=mask)
    v = x + b
    inner = 0.7978845608028654 * (v + 0.044715 * v * v * v)
    out = 0.5 * v * (1.0 + libdevice.tanh(inner))
    tl.store(out_ptr + offs, out, mask=mask)


CORPUS = [
    dict(
        name="bias_gelu",
        performance=dict(
            grid=(32768, 1, 1),
            scalars={"n": 16777216, "cols": 4096},
            counts={"x_ptr": 16777216, "bias_ptr": 4096, "out_ptr": 16777216},
            problem="4096 rows x 4096 cols f32 (2^24 elements) plus a 4096 bias, 512 per program",
        ),
        kernel=bias_gelu,
        family="elementwise",
        grid=(4, 1, 1),
        num_warps=4,
        constexprs={"BLOCK": 512},
        params=[
            ("x_ptr", "input", "f32", 2048),
            ("bias_ptr", "input", "f32", 128),
            ("out_ptr", "output", "f32", 2048),
            ("n", "scalar", "s32", 2048),
            ("cols", "scalar", "s32", 128),
        ],
        shape={"rows": 16, "cols": 128},
        tags=["activation", "fused"],
    ),
]
