"""Triton FlashAttention forward, the shape users run: out = softmax(Q K^T *
scale) V per (batch, head), head dim 64, fp16 in and out, fp32 accumulation.

Q, K, V and O are contiguous [batch*heads, seq_len, 64]. Program (m, bh)
owns a 64-row block of queries of head bh and walks the keys in 64-row
blocks with the online softmax (running max m_i and denominator l_i, in
base 2: the scale is folded with log2(e) and exp2 is used); both products
are tl.dot (mma.sync), and num_stages=2 pipelines the K/V loads
(cp.async).  The causal variant stops each query block's key loop at its
diagonal, so trip counts differ between programs.

This is issue 27's test case for loops in steady state: at the
performance size (4 x 16 heads, seq 4096) each program runs 64 key
blocks; a per-instruction replay of every iteration costs far more than
ptxas does.
"""

import triton
import triton.language as tl


@triton.jit
def flash_attn_fwd(q_ptr, k_ptr, v_ptr, o_ptr, sm_scale, seq_len,
                   BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, HEAD_DIM: tl.constexpr, CAUSAL: tl.constexpr):
    pid_m = tl.program_id(0)
    off_bh = tl.program_id(1)
    base = off_bh.to(tl.int64) * seq_len * HEAD_DIM
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rd = tl.arange(0, HEAD_DIM)
    rn0 = tl.arange(0, BLOCK_N)
    q = tl.load(q_ptr + base + rm[:, None] * HEAD_DIM + rd[None, :])
    m_i = tl.full((BLOCK_M,), -float("inf"), tl.float32)
    l_i = tl.zeros((BLOCK_M,), tl.float32)
    acc = tl.zeros((BLOCK_M, HEAD_DIM), tl.float32)
    qk_scale = sm_scale * 1.4426950408889634  # log2(e)
    if CAUSAL:
        hi = (pid_m + 1) * BLOCK_M
    else:
        hi = seq_len
    for start in range(0, hi, BLOCK_N):
        rn = start + rn0
        k = tl.load(k_ptr + base + rn[None, :] * HEAD_DIM + rd[:, None])
        s = tl.dot(q, k) * qk_scale
        if CAUSAL:
            s = tl.where(rm[:, None] >= rn[None, :], s, -float("inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))
        alpha = tl.math.exp2(m_i - m_new)
        p = tl.math.exp2(s - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, 1)
        v = tl.load(v_ptr + base + rn[:, None] * HEAD_DIM + rd[None, :])
        acc = acc * alpha[:, None] + tl.dot(p.to(tl.float16), v)
        m_i = m_new
    out = acc / l_i[:, None]
    tl.store(o_ptr + base + rm[:, None] * HEAD_DIM + rd[None, :], out.to(tl.float16))


def _entry(name, causal):
    seq, heads = 128, 1  # check launch: one head, two query blocks
    n = heads * seq * 64
    perf_seq, perf_heads = 4096, 4 * 16
    perf_n = perf_heads * perf_seq * 64
    return dict(
        name=name,
        kernel=flash_attn_fwd,
        family="attention",
        grid=(seq // 64, heads, 1),
        num_warps=4,
        num_stages=2,
        constexprs={"BLOCK_M": 64, "BLOCK_N": 64, "HEAD_DIM": 64, "CAUSAL": causal},
        params=[
            ("q_ptr", "input", "f16", n),
            ("k_ptr", "input", "f16", n),
            ("v_ptr", "input", "f16", n),
            ("o_ptr", "output", "f16", n),
            ("sm_scale", "scalar", "f32", 0.125),
            ("seq_len", "scalar", "s32", seq),
        ],
        performance=dict(
            grid=(perf_seq // 64, perf_heads, 1),
            scalars={"sm_scale": 0.125, "seq_len": perf_seq},
            counts={"q_ptr": perf_n, "k_ptr": perf_n, "v_ptr": perf_n, "o_ptr": perf_n},
            problem=f"batch 4 x 16 heads, seq {perf_seq}, head_dim 64, fp16"
                    + (", causal" if causal else ""),
        ),
        shape={"seq": seq, "heads": heads, "head_dim": 64, "causal": int(causal)},
        tags=["tensor-core", "fp16", "online-softmax", "flash-attention"] + (["causal"] if causal else []),
    )


CORPUS = [_entry("flash_attn_fwd", False), _entry("flash_attn_fwd_causal", True)]
