"""Triton dropout with the counter-based Philox RNG (Triton tutorial
"low-memory dropout").

tl.rand(seed, offsets) derives each element's random number from (seed,
index) alone, so nothing but the seed is stored; the Philox rounds become a
long chain of mul.hi / xor in the PTX.  p = 0.25, kept values are scaled by
1 / (1 - p).
"""

import triton
import triton.language as tl


@triton.jit
def dropout(x_ptr, out_ptr, n, p, seed, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    r = tl.rand(seed, offs)
    keep = r > p
    out = tl.where(keep, x / (1 - p), 0.0)
    tl.store(out_ptr + offs, out, mask=mask)


CORPUS = [
    dict(
        name="dropout",
        performance=dict(
            grid=(65536, 1, 1),
            scalars={"n": 16777216, "p": 0.25, "seed": 1234},
            counts={"x_ptr": 16777216, "out_ptr": 16777216},
            problem="2^24 f32 elements, 256 per program",
        ),
        kernel=dropout,
        family="elementwise",
        grid=(4, 1, 1),
        num_warps=4,
        constexprs={"BLOCK": 256},
        params=[
            ("x_ptr", "input", "f32", 1024),
            ("out_ptr", "output", "f32", 1024),
            ("n", "scalar", "s32", 1024),
            ("p", "scalar", "f32", 0.25),
            ("seed", "scalar", "s32", 1234),
        ],
        shape={"n": 1024},
        tags=["rng"],
    ),
]
