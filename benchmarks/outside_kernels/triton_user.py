"""Triton kernels as a user writes them, outside the corpus (the Triton tutorials' shapes).

For ``benchmarks/reports/triton_hook.py --outside``: what the hook costs on kernels
ptxopt was never developed against. Each ``CORPUS`` entry has the same form
as ``corpus/triton/*.py`` (signature, constexprs, ``num_warps``) so that
:func:`ptxopt.testing.triton_corpus.compile_spec` compiles it for sm_89
without a GPU; none of them is in ``corpus/manifest.json``.

* ``user_layernorm``: the fused-layernorm tutorial's forward, three loops
  over the columns in ``BLOCK``-wide chunks (mean, variance, normalise);
* ``user_softmax``: the fused-softmax tutorial, a row-strided loop over rows
  per program, one 1024-wide block per row;
* ``user_matmul``: the matmul tutorial, fp16 in, fp32 accumulation, grouped
  program ordering, 128x128x32 tiles, 8 warps, 3 stages;
* ``user_rope``: rotary position embedding on a (tokens, heads, 64) tensor,
  cos/sin tables indexed by token position.
"""

import triton
import triton.language as tl


@triton.jit
def user_layernorm(X, Y, W, B, Mean, Rstd, stride, N, eps, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    Y += row * stride
    X += row * stride
    _mean = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        a = tl.load(X + cols, mask=cols < N, other=0.).to(tl.float32)
        _mean += a
    mean = tl.sum(_mean, axis=0) / N
    _var = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        x = tl.load(X + cols, mask=cols < N, other=0.).to(tl.float32)
        x = tl.where(cols < N, x - mean, 0.)
        _var += x * x
    var = tl.sum(_var, axis=0) / N
    rstd = 1 / tl.sqrt(var + eps)
    tl.store(Mean + row, mean)
    tl.store(Rstd + row, rstd)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        mask = cols < N
        w = tl.load(W + cols, mask=mask)
        b = tl.load(B + cols, mask=mask)
        x = tl.load(X + cols, mask=mask, other=0.).to(tl.float32)
        x_hat = (x - mean) * rstd
        y = x_hat * w + b
        tl.store(Y + cols, y, mask=mask)


@triton.jit
def user_softmax(output_ptr, input_ptr, input_row_stride, output_row_stride, n_rows, n_cols,
                 BLOCK_SIZE: tl.constexpr):
    row_start = tl.program_id(0)
    row_step = tl.num_programs(0)
    for row_idx in range(row_start, n_rows, row_step):
        row_start_ptr = input_ptr + row_idx * input_row_stride
        col_offsets = tl.arange(0, BLOCK_SIZE)
        input_ptrs = row_start_ptr + col_offsets
        mask = col_offsets < n_cols
        row = tl.load(input_ptrs, mask=mask, other=-float('inf'))
        row_minus_max = row - tl.max(row, axis=0)
        numerator = tl.exp(row_minus_max)
        denominator = tl.sum(numerator, axis=0)
        softmax_output = numerator / denominator
        output_row_start_ptr = output_ptr + row_idx * output_row_stride
        tl.store(output_row_start_ptr + col_offsets, softmax_output, mask=mask)


@triton.jit
def user_matmul(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,
                GROUP_SIZE_M: tl.constexpr):
    pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_SIZE_M)
    num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
    num_pid_in_group = GROUP_SIZE_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_SIZE_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_SIZE_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m
    offs_am = (pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)) % M
    offs_bn = (pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)) % N
    offs_k = tl.arange(0, BLOCK_SIZE_K)
    a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
    b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)
    accumulator = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_SIZE_K)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_SIZE_K, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_SIZE_K, other=0.0)
        accumulator = tl.dot(a, b, accumulator)
        a_ptrs += BLOCK_SIZE_K * stride_ak
        b_ptrs += BLOCK_SIZE_K * stride_bk
    c = accumulator.to(tl.float16)
    offs_cm = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
    offs_cn = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
    c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
    tl.store(c_ptrs, c, mask=c_mask)


@triton.jit
def user_rope(x_ptr, cos_ptr, sin_ptr, out_ptr, stride_t, stride_h, n_heads, HALF: tl.constexpr):
    t = tl.program_id(0)
    h = tl.program_id(1)
    d = tl.arange(0, HALF)
    base = x_ptr + t * stride_t + h * stride_h
    x1 = tl.load(base + d)
    x2 = tl.load(base + HALF + d)
    c = tl.load(cos_ptr + t * HALF + d)
    s = tl.load(sin_ptr + t * HALF + d)
    obase = out_ptr + t * stride_t + h * stride_h
    tl.store(obase + d, x1 * c - x2 * s)
    tl.store(obase + HALF + d, x2 * c + x1 * s)


CORPUS = [
    dict(name="user_layernorm", kernel=user_layernorm, family="normalization", grid=(4, 1, 1), num_warps=8,
         constexprs={"BLOCK_SIZE": 1024},
         params=[("X", "input", "f32", 4 * 2048), ("Y", "output", "f32", 4 * 2048), ("W", "input", "f32", 2048),
                 ("B", "input", "f32", 2048), ("Mean", "output", "f32", 4), ("Rstd", "output", "f32", 4),
                 ("stride", "scalar", "s32", 2048), ("N", "scalar", "s32", 2048), ("eps", "scalar", "f32", 1e-5)]),
    dict(name="user_softmax", kernel=user_softmax, family="softmax", grid=(4, 1, 1), num_warps=4,
         constexprs={"BLOCK_SIZE": 1024},
         params=[("output_ptr", "output", "f32", 16 * 781), ("input_ptr", "input", "f32", 16 * 781),
                 ("input_row_stride", "scalar", "s32", 781), ("output_row_stride", "scalar", "s32", 781),
                 ("n_rows", "scalar", "s32", 16), ("n_cols", "scalar", "s32", 781)]),
    dict(name="user_matmul", kernel=user_matmul, family="matmul", grid=(4, 1, 1), num_warps=8, num_stages=3,
         constexprs={"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 8},
         params=[("a_ptr", "input", "f16", 256 * 256), ("b_ptr", "input", "f16", 256 * 256),
                 ("c_ptr", "output", "f16", 256 * 256), ("M", "scalar", "s32", 256), ("N", "scalar", "s32", 256),
                 ("K", "scalar", "s32", 256), ("stride_am", "scalar", "s32", 256),
                 ("stride_ak", "scalar", "s32", 1), ("stride_bk", "scalar", "s32", 256),
                 ("stride_bn", "scalar", "s32", 1), ("stride_cm", "scalar", "s32", 256),
                 ("stride_cn", "scalar", "s32", 1)]),
    dict(name="user_rope", kernel=user_rope, family="elementwise", grid=(8, 4, 1), num_warps=1,
         constexprs={"HALF": 32},
         params=[("x_ptr", "input", "f32", 8 * 4 * 64), ("cos_ptr", "input", "f32", 8 * 32),
                 ("sin_ptr", "input", "f32", 8 * 32), ("out_ptr", "output", "f32", 8 * 4 * 64),
                 ("stride_t", "scalar", "s32", 256), ("stride_h", "scalar", "s32", 64),
                 ("n_heads", "scalar", "s32", 4)]),
]
