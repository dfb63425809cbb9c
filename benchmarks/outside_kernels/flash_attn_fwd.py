"""A user's flash-attention forward in Triton (the fused-attention tutorial's shape), outside the corpus.

``out = softmax(Q K^T * scale) V`` per (batch, head), non-causal, fp16 in and out, fp32 accumulation:
each program owns ``BLOCK_M = 128`` query rows of one head and walks the keys in ``BLOCK_N = 64`` blocks
with the online softmax (running max and denominator, ``exp2`` with ``scale * log2(e)`` folded in);
``HEAD_DIM = 64``, 8 warps, 2 stages. Q/K/V/O are contiguous ``(batch * heads, seq_len, 64)``.

Written out by this script (Triton compiles for sm_89 without a GPU; regenerate only this way, the PTX is
what is committed)::

    python benchmarks/outside_kernels/flash_attn_fwd.py   # writes flash_attn_fwd.ptx and .contract.json

The performance launch: batch 4 x 16 heads, seq_len 4096, grid (32, 64), block 256 (8 warps);
the check launch: one head, seq_len 128, grid (1, 1).
"""

import json
import re
import sys
from pathlib import Path

import triton
import triton.language as tl


@triton.jit
def flash_attn_fwd(Q, K, V, Out, seq_len, sm_scale,
                   BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, HEAD_DIM: tl.constexpr):
    start_m = tl.program_id(0)
    head = tl.program_id(1).to(tl.int64)
    base = head * seq_len * HEAD_DIM
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    q = tl.load(Q + base + offs_m[:, None] * HEAD_DIM + offs_d[None, :])
    m_i = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32) + 1.0
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    qk_scale = sm_scale * 1.44269504
    for start_n in range(0, seq_len, BLOCK_N):
        k = tl.load(K + base + (start_n + offs_n)[None, :] * HEAD_DIM + offs_d[:, None])
        qk = tl.dot(q, k)
        m_ij = tl.maximum(m_i, tl.max(qk, 1) * qk_scale)
        qk = qk * qk_scale - m_ij[:, None]
        p = tl.math.exp2(qk)
        l_ij = tl.sum(p, 1)
        alpha = tl.math.exp2(m_i - m_ij)
        l_i = l_i * alpha + l_ij
        acc = acc * alpha[:, None]
        v = tl.load(V + base + (start_n + offs_n)[:, None] * HEAD_DIM + offs_d[None, :])
        acc = tl.dot(p.to(tl.float16), v, acc)
        m_i = m_ij
    acc = acc / l_i[:, None]
    tl.store(Out + base + offs_m[:, None] * HEAD_DIM + offs_d[None, :], acc.to(tl.float16))


#: the check launch's shape (small, for the interpreter): one head of 128 tokens
CHECK_SEQ = 128
CORPUS = [
    dict(name="flash_attn_fwd", kernel=flash_attn_fwd, family="attention", grid=(CHECK_SEQ // 128, 1, 1),
         num_warps=8, num_stages=2, constexprs={"BLOCK_M": 128, "BLOCK_N": 64, "HEAD_DIM": 64},
         params=[("Q", "input", "f16", CHECK_SEQ * 64), ("K", "input", "f16", CHECK_SEQ * 64),
                 ("V", "input", "f16", CHECK_SEQ * 64), ("Out", "output", "f16", CHECK_SEQ * 64),
                 ("seq_len", "scalar", "s32", CHECK_SEQ), ("sm_scale", "scalar", "f32", 0.125)]),
]


def main() -> int:
    root = Path(__file__).resolve().parents[2]
    sys.path.insert(0, str(root))
    from ptxopt.testing.triton_corpus import compile_kernel

    (spec,) = CORPUS
    ck = compile_kernel(spec)
    ptx = ck.asm["ptx"]
    here = Path(__file__).parent
    (here / "flash_attn_fwd.ptx").write_text(ptx)
    block = [32 * spec["num_warps"], 1, 1]
    names = [f"flash_attn_fwd_param_{i}" for i in range(len(spec["params"]))]
    params = []
    for name, (arg, role, dtype, amount) in zip(names, spec["params"]):
        p = {"name": name, "arg": arg, "role": role, "dtype": dtype}
        p.update({"value": amount} if role == "scalar" else {"count": amount, "align": 16})
        params.append(p)
    # Triton appends its scratch pointers (null at this size), as the corpus's Triton contracts say
    extra = re.findall(r"\.param \.u64 \.ptr \.global \.align 1 (flash_attn_fwd_param_(\d+))", ptx)
    for i, (name, _) in enumerate(n for n in extra if int(n[1]) >= len(names)):
        params.append({"name": name, "arg": ("global_scratch", "profile_scratch")[min(i, 1)], "role": "scratch",
                       "dtype": "u8", "count": 0, "align": 1, "bytes": 0, "bytes_per_cta": 0, "nullable": True})
    heads, seq = 64, 4096
    contract = {
        "entry": "flash_attn_fwd",
        "launch": {"grid": list(spec["grid"]), "block": block, "shared_bytes": ck.metadata.shared},
        "params": params,
        "performance": {"grid": [seq // 128, heads, 1], "block": block, "shared_bytes": ck.metadata.shared,
                        "scalars": {names[4]: seq, names[5]: 0.125},
                        "problem": f"flash attention forward, {heads} heads (batch 4 x 16), seq_len {seq}, "
                                   "head_dim 64, "
                                   "fp16: Q, K, V read (K and V once per 128-row query block), O written"},
    }
    (here / "flash_attn_fwd.contract.json").write_text(json.dumps(contract, indent=1) + "\n")
    print(f"flash_attn_fwd: {len(ptx.splitlines())} PTX lines, {ck.metadata.shared} B shared")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
