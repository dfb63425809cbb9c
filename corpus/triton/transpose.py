"""Triton 2D transpose, out = in^T for a 64 x 64 f32 matrix.

Each program loads a coalesced 32 x 32 tile and stores it transposed with
tl.trans; Triton converts the register layout through shared memory, so
this is the Triton counterpart of the CUDA padded-tile transpose.
"""

import triton
import triton.language as tl


@triton.jit
def transpose(in_ptr, out_ptr, rows, cols, BLOCK: tl.constexpr):
    pid_r = tl.program_id(0)
    pid_c = tl.program_id(1)
    r = pid_r * BLOCK + tl.arange(0, BLOCK)
    c = pid_c * BLOCK + tl.arange(0, BLOCK)
    mask = (r[:, None] < rows) & (c[None, :] < cols)
    tile = tl.load(in_ptr + r[:, None] * cols + c[None, :], mask=mask)
    out_mask = (c[:, None] < cols) & (r[None, :] < rows)
    tl.store(out_ptr + c[:, None] * rows + r[None, :], tl.trans(tile), mask=out_mask)


CORPUS = [
    dict(
        name="transpose",
        performance=dict(
            grid=(128, 128, 1),
            scalars={"rows": 4096, "cols": 4096},
            counts={"in_ptr": 16777216, "out_ptr": 16777216},
            problem="4096 x 4096 f32 transpose, 32x32 tiles",
        ),
        kernel=transpose,
        family="transpose",
        grid=(2, 2, 1),
        num_warps=4,
        constexprs={"BLOCK": 32},
        params=[
            ("in_ptr", "input", "f32", 4096),
            ("out_ptr", "output", "f32", 4096),
            ("rows", "scalar", "s32", 64),
            ("cols", "scalar", "s32", 64),
        ],
        shape={"rows": 64, "cols": 64},
    ),
]
