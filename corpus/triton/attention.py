"""Triton single-head attention forward (FlashAttention-style), small fixed
dims: out = softmax(Q K^T * scale) V with L = 64 tokens, head dim D = 16,
fp16 inputs, fp32 accumulation and output.

Each of the 4 programs owns a 16-row block of queries and walks the keys
in 16-row blocks with the online softmax (running max m_i and denominator
l_i); both products are tl.dot, so the PTX has mma.sync for QK^T and PV
and the row statistics in between.  scale = 1/sqrt(16).
"""

import triton
import triton.language as tl


@triton.jit
def attention(q_ptr, k_ptr, v_ptr, o_ptr, seq_len, scale,
              BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, HEAD_DIM: tl.constexpr):
    pid = tl.program_id(0)
    rm = pid * BLOCK_M + tl.arange(0, BLOCK_M)
    rd = tl.arange(0, HEAD_DIM)
    q = tl.load(q_ptr + rm[:, None] * HEAD_DIM + rd[None, :])
    m_i = tl.full((BLOCK_M,), -float("inf"), tl.float32)
    l_i = tl.zeros((BLOCK_M,), tl.float32)
    acc = tl.zeros((BLOCK_M, HEAD_DIM), tl.float32)
    for start in range(0, seq_len, BLOCK_N):
        rn = start + tl.arange(0, BLOCK_N)
        k = tl.load(k_ptr + rn[None, :] * HEAD_DIM + rd[:, None])
        s = tl.dot(q, k) * scale
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        alpha = tl.exp(m_i - m_new)
        p = tl.exp(s - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, axis=1)
        v = tl.load(v_ptr + rn[:, None] * HEAD_DIM + rd[None, :])
        acc = acc * alpha[:, None] + tl.dot(p.to(tl.float16), v)
        m_i = m_new
    tl.store(o_ptr + rm[:, None] * HEAD_DIM + rd[None, :], acc / l_i[:, None])


CORPUS = [
    dict(
        name="attention",
        performance=dict(
            grid=(256, 1, 1),
            scalars={"seq_len": 4096, "scale": 0.25},
            counts={"q_ptr": 65536, "k_ptr": 65536, "v_ptr": 65536, "o_ptr": 65536},
            problem="one head: seq 4096 x head_dim 16 (HEAD_DIM=16 compiled in; the kernel has no batch or head index), 16 query rows per program",
        ),
        kernel=attention,
        family="attention",
        grid=(4, 1, 1),
        num_warps=4,
        num_stages=1,
        constexprs={"BLOCK_M": 16, "BLOCK_N": 16, "HEAD_DIM": 16},
        params=[
            ("q_ptr", "input", "f16", 1024),
            ("k_ptr", "input", "f16", 1024),
            ("v_ptr", "input", "f16", 1024),
            ("o_ptr", "output", "f32", 1024),
            ("seq_len", "scalar", "s32", 64),
            ("scale", "scalar", "f32", 0.25),
        ],
        shape={"seq": 64, "head_dim": 16},
        tags=["tensor-core", "fp16", "online-softmax"],
    ),
]
