"""Triton embedding gather: out[t, :] = table[ids[t], :].

A block of 8 token ids is loaded, then a 2D [8, 32] tile of rows is
gathered with pointer arithmetic on the ids (vocab 128, dim 32, 32
tokens, 4 programs).
"""

import triton
import triton.language as tl


@triton.jit
def embedding(table_ptr, ids_ptr, out_ptr, tokens, DIM: tl.constexpr, BLOCK_T: tl.constexpr):
    pid = tl.program_id(0)
    t = pid * BLOCK_T + tl.arange(0, BLOCK_T)
    tmask = t < tokens
    ids = tl.load(ids_ptr + t, mask=tmask, other=0)
    d = tl.arange(0, DIM)
    rows = tl.load(table_ptr + ids[:, None] * DIM + d[None, :], mask=tmask[:, None])
    tl.store(out_ptr + t[:, None] * DIM + d[None, :], rows, mask=tmask[:, None])


CORPUS = [
    dict(
        name="embedding",
        performance=dict(
            grid=(65536, 1, 1),
            scalars={"tokens": 524288},
            counts={"table_ptr": 1024000, "ids_ptr": 524288, "out_ptr": 16777216},
            problem="524288 tokens (batch 256 x seq 2048) of a 32000 x 32 f32 embedding table (DIM=32 compiled in), 8 tokens per program",
        ),
        kernel=embedding,
        family="gather",
        grid=(4, 1, 1),
        num_warps=2,
        constexprs={"DIM": 32, "BLOCK_T": 8},
        params=[
            ("table_ptr", "input", "f32", 4096),
            ("ids_ptr", "input", "s32", 32, {"range": [0, 128]}),
            ("out_ptr", "output", "f32", 1024),
            ("tokens", "scalar", "s32", 32),
        ],
        shape={"vocab": 128, "dim": 32, "tokens": 32},
    ),
]
