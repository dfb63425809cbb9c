"""Triton histogram with scatter atomics: bins[x[i]] += 1.

Each program loads 1024 int32 values in [0, 64) and issues one masked
tl.atomic_add per element into a 64-bin int32 histogram (which must be
zeroed before the launch), i.e. ``atom.global.add`` / ``red`` in PTX.
"""

import triton
import triton.language as tl


@triton.jit
def histogram(x_ptr, bins_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0)
    tl.atomic_add(bins_ptr + x, 1, mask=mask)


CORPUS = [
    dict(
        name="histogram",
        performance=dict(
            grid=(16384, 1, 1),
            scalars={"n": 16777216},
            counts={"x_ptr": 16777216, "bins_ptr": 64},
            problem="2^24 s32 values into 64 bins, 1024 per program",
        ),
        kernel=histogram,
        family="histogram",
        grid=(4, 1, 1),
        num_warps=4,
        constexprs={"BLOCK": 1024},
        params=[
            ("x_ptr", "input", "s32", 4096, {"range": [0, 64]}),
            ("bins_ptr", "inout", "s32", 64, {"init": "zero"}),
            ("n", "scalar", "s32", 4096),
        ],
        shape={"n": 4096, "bins": 64},
        tags=["atomics"],
    ),
]
