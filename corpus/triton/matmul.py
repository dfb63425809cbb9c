"""Triton tiled matmul, C = A @ B, with small tiles through tl.dot.

``matmul_f16``: fp16 A (64x64) and B (64x64), fp32 accumulation, fp16 C;
32x32x16 tiles, so 2x2 programs each step K four times.  tl.dot lowers to
``mma.sync.aligned.m16n8k16`` with ``ldmatrix`` from shared memory, and
num_stages=2 software-pipelines the global->shared copies (cp.async).

``matmul_f32_ieee``: the same loop over fp32 with input_precision="ieee",
which Triton lowers to plain FMAs (the "FMA dot" path) instead of tf32 MMA.
"""

import triton
import triton.language as tl


@triton.jit
def matmul_f16(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bk, stride_cm,
               BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + rm[:, None] * stride_am + rk[None, :]
    b_ptrs = b_ptr + rk[:, None] * stride_bk + rn[None, :]
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        a = tl.load(a_ptrs, mask=(rm[:, None] < M) & (rk[None, :] + k < K), other=0.0)
        b = tl.load(b_ptrs, mask=(rk[:, None] + k < K) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K
        b_ptrs += BLOCK_K * stride_bk
    c_ptrs = c_ptr + rm[:, None] * stride_cm + rn[None, :]
    tl.store(c_ptrs, acc.to(tl.float16), mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit
def matmul_f32_ieee(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bk, stride_cm,
                    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + rm[:, None] * stride_am + rk[None, :]
    b_ptrs = b_ptr + rk[:, None] * stride_bk + rn[None, :]
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        a = tl.load(a_ptrs, mask=(rm[:, None] < M) & (rk[None, :] + k < K), other=0.0)
        b = tl.load(b_ptrs, mask=(rk[:, None] + k < K) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc, input_precision="ieee")
        a_ptrs += BLOCK_K
        b_ptrs += BLOCK_K * stride_bk
    c_ptrs = c_ptr + rm[:, None] * stride_cm + rn[None, :]
    tl.store(c_ptrs, acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


_SCALARS_64 = [
    ("M", "scalar", "s32", 64),
    ("N", "scalar", "s32", 64),
    ("K", "scalar", "s32", 64),
    ("stride_am", "scalar", "s32", 64),
    ("stride_bk", "scalar", "s32", 64),
    ("stride_cm", "scalar", "s32", 64),
]
_SCALARS_32 = [(name, role, dtype, 32) for name, role, dtype, _ in _SCALARS_64]

CORPUS = [
    dict(
        name="matmul_f16",
        performance=dict(
            grid=(64, 64, 1),
            scalars={"M": 2048, "N": 2048, "K": 2048, "stride_am": 2048, "stride_bk": 2048, "stride_cm": 2048},
            counts={"a_ptr": 4194304, "b_ptr": 4194304, "c_ptr": 4194304},
            problem="C = A B, 2048 x 2048 x 2048 f16 (f32 accumulate), 32x32 tiles",
        ),
        kernel=matmul_f16,
        family="matmul",
        grid=(2, 2, 1),
        num_warps=4,
        num_stages=2,
        constexprs={"BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 16},
        params=[
            ("a_ptr", "input", "f16", 4096),
            ("b_ptr", "input", "f16", 4096),
            ("c_ptr", "output", "f16", 4096),
        ] + _SCALARS_64,
        shape={"m": 64, "n": 64, "k": 64},
        tags=["tensor-core", "fp16", "pipelined"],
    ),
    dict(
        name="matmul_f32_ieee",
        performance=dict(
            grid=(128, 128, 1),
            scalars={"M": 2048, "N": 2048, "K": 2048, "stride_am": 2048, "stride_bk": 2048, "stride_cm": 2048},
            counts={"a_ptr": 4194304, "b_ptr": 4194304, "c_ptr": 4194304},
            problem="C = A B, 2048 x 2048 x 2048 f32 (IEEE FMA dot), 16x16 tiles",
        ),
        kernel=matmul_f32_ieee,
        family="matmul",
        grid=(2, 2, 1),
        num_warps=4,
        num_stages=1,
        constexprs={"BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": 16},
        params=[
            ("a_ptr", "input", "f32", 1024),
            ("b_ptr", "input", "f32", 1024),
            ("c_ptr", "output", "f32", 1024),
        ] + _SCALARS_32,
        shape={"m": 32, "n": 32, "k": 32},
        tags=["fma-dot"],
    ),
]
