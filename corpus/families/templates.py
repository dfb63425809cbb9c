"""Triton templates of the generated kernel families (``corpus/gen_families.py``).

Each ``@triton.jit`` function is one *template*; the generator draws its
constexprs (block shapes, fused operations, dtypes through the pointer
types, static unrolling) and its runtime sizes (which set the trip counts of
its ``range`` loops) per kernel. Constexpr ``if``s are resolved at compile
time, so one template yields structurally different PTX. Every loop whose
bound is a runtime argument is listed in the kernel's manifest ``loops``.
"""

import triton
import triton.language as tl


@triton.jit
def _unary(x, a, OP: tl.constexpr):
    if OP == 0:
        r = x * a + 1.0
    elif OP == 1:
        r = tl.maximum(x, 0.0)
    elif OP == 2:
        r = x * tl.sigmoid(x)
    elif OP == 3:
        r = 2.0 * tl.sigmoid(2.0 * x) - 1.0
    elif OP == 4:
        r = tl.exp(x * a)
    elif OP == 5:
        r = x * x
    elif OP == 6:
        r = tl.minimum(tl.maximum(x, -a), a)
    else:
        r = tl.abs(x) + a
    return r


# -- pointwise ----------------------------------------------------------------


@triton.jit
def ew_chain(x_ptr, y_ptr, out_ptr, n, iters, a, BLOCK: tl.constexpr, USE_Y: tl.constexpr,
             OP1: tl.constexpr, OP2: tl.constexpr, OP3: tl.constexpr):
    """out = op3(op2(op1(x [+ y]))) over ``iters`` consecutive blocks per program."""
    pid = tl.program_id(0)
    for i in range(0, iters):
        offs = (pid * iters + i) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
        if USE_Y:
            x = x + tl.load(y_ptr + offs, mask=mask, other=0.0).to(tl.float32)
        x = _unary(x, a, OP1)
        x = _unary(x, a, OP2)
        x = _unary(x, a, OP3)
        tl.store(out_ptr + offs, x.to(out_ptr.dtype.element_ty), mask=mask)


# -- row reductions (softmax, layernorm, rmsnorm: one group) ------------------


@triton.jit
def softmax_rows(x_ptr, y_ptr, stride, cols, BLOCK: tl.constexpr, LOOPED: tl.constexpr):
    row = tl.program_id(0)
    base = x_ptr + row * stride
    if LOOPED:
        m = tl.full((BLOCK,), -float("inf"), tl.float32)
        for c in range(0, cols, BLOCK):
            offs = c + tl.arange(0, BLOCK)
            m = tl.maximum(m, tl.load(base + offs, mask=offs < cols, other=-float("inf")).to(tl.float32))
        mx = tl.max(m, axis=0)
        s = tl.zeros((BLOCK,), tl.float32)
        for c in range(0, cols, BLOCK):
            offs = c + tl.arange(0, BLOCK)
            x = tl.load(base + offs, mask=offs < cols, other=-float("inf")).to(tl.float32)
            s += tl.exp(x - mx)
        den = tl.sum(s, axis=0)
        for c in range(0, cols, BLOCK):
            offs = c + tl.arange(0, BLOCK)
            x = tl.load(base + offs, mask=offs < cols, other=-float("inf")).to(tl.float32)
            tl.store(y_ptr + row * stride + offs, (tl.exp(x - mx) / den).to(y_ptr.dtype.element_ty),
                     mask=offs < cols)
    else:
        offs = tl.arange(0, BLOCK)
        x = tl.load(base + offs, mask=offs < cols, other=-float("inf")).to(tl.float32)
        e = tl.exp(x - tl.max(x, axis=0))
        tl.store(y_ptr + row * stride + offs, (e / tl.sum(e, axis=0)).to(y_ptr.dtype.element_ty),
                 mask=offs < cols)


@triton.jit
def layernorm_rows(x_ptr, w_ptr, b_ptr, y_ptr, stride, cols, eps, BLOCK: tl.constexpr,
                   LOOPED: tl.constexpr, AFFINE: tl.constexpr):
    row = tl.program_id(0)
    base = x_ptr + row * stride
    if LOOPED:
        acc = tl.zeros((BLOCK,), tl.float32)
        acc2 = tl.zeros((BLOCK,), tl.float32)
        for c in range(0, cols, BLOCK):
            offs = c + tl.arange(0, BLOCK)
            x = tl.load(base + offs, mask=offs < cols, other=0.0).to(tl.float32)
            acc += x
            acc2 += x * x
        mean = tl.sum(acc, axis=0) / cols
        var = tl.sum(acc2, axis=0) / cols - mean * mean
        rstd = 1.0 / tl.sqrt(var + eps)
        for c in range(0, cols, BLOCK):
            offs = c + tl.arange(0, BLOCK)
            x = tl.load(base + offs, mask=offs < cols, other=0.0).to(tl.float32)
            y = (x - mean) * rstd
            if AFFINE:
                y = y * tl.load(w_ptr + offs, mask=offs < cols, other=0.0) + tl.load(b_ptr + offs, mask=offs < cols, other=0.0)
            tl.store(y_ptr + row * stride + offs, y.to(y_ptr.dtype.element_ty), mask=offs < cols)
    else:
        offs = tl.arange(0, BLOCK)
        x = tl.load(base + offs, mask=offs < cols, other=0.0).to(tl.float32)
        mean = tl.sum(x, axis=0) / cols
        d = tl.where(offs < cols, x - mean, 0.0)
        rstd = 1.0 / tl.sqrt(tl.sum(d * d, axis=0) / cols + eps)
        y = d * rstd
        if AFFINE:
            y = y * tl.load(w_ptr + offs, mask=offs < cols, other=0.0) + tl.load(b_ptr + offs, mask=offs < cols, other=0.0)
        tl.store(y_ptr + row * stride + offs, y.to(y_ptr.dtype.element_ty), mask=offs < cols)


@triton.jit
def rmsnorm_rows(x_ptr, w_ptr, y_ptr, stride, cols, eps, BLOCK: tl.constexpr, LOOPED: tl.constexpr):
    row = tl.program_id(0)
    base = x_ptr + row * stride
    if LOOPED:
        acc = tl.zeros((BLOCK,), tl.float32)
        for c in range(0, cols, BLOCK):
            offs = c + tl.arange(0, BLOCK)
            x = tl.load(base + offs, mask=offs < cols, other=0.0).to(tl.float32)
            acc += x * x
        rstd = 1.0 / tl.sqrt(tl.sum(acc, axis=0) / cols + eps)
        for c in range(0, cols, BLOCK):
            offs = c + tl.arange(0, BLOCK)
            x = tl.load(base + offs, mask=offs < cols, other=0.0).to(tl.float32)
            w = tl.load(w_ptr + offs, mask=offs < cols, other=0.0)
            tl.store(y_ptr + row * stride + offs, (x * rstd * w).to(y_ptr.dtype.element_ty), mask=offs < cols)
    else:
        offs = tl.arange(0, BLOCK)
        x = tl.load(base + offs, mask=offs < cols, other=0.0).to(tl.float32)
        rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / cols + eps)
        w = tl.load(w_ptr + offs, mask=offs < cols, other=0.0)
        tl.store(y_ptr + row * stride + offs, (x * rstd * w).to(y_ptr.dtype.element_ty), mask=offs < cols)


# -- full reduction -----------------------------------------------------------


@triton.jit
def reduce_partial(x_ptr, part_ptr, n, iters, BLOCK: tl.constexpr, KIND: tl.constexpr):
    """Each program folds ``iters`` blocks into one partial (sum, max or sum of squares)."""
    pid = tl.program_id(0)
    if KIND == 1:
        acc = tl.full((BLOCK,), -float("inf"), tl.float32)
    else:
        acc = tl.zeros((BLOCK,), tl.float32)
    for i in range(0, iters):
        offs = (pid * iters + i) * BLOCK + tl.arange(0, BLOCK)
        if KIND == 1:
            acc = tl.maximum(acc, tl.load(x_ptr + offs, mask=offs < n, other=-float("inf")).to(tl.float32))
        elif KIND == 2:
            x = tl.load(x_ptr + offs, mask=offs < n, other=0.0).to(tl.float32)
            acc += x * x
        else:
            acc += tl.load(x_ptr + offs, mask=offs < n, other=0.0).to(tl.float32)
    if KIND == 1:
        tl.store(part_ptr + pid, tl.max(acc, axis=0))
    else:
        tl.store(part_ptr + pid, tl.sum(acc, axis=0))


# -- scans --------------------------------------------------------------------


@triton.jit
def scan_rows(x_ptr, y_ptr, stride, cols, BLOCK: tl.constexpr):
    """Inclusive prefix sum along each row, ``BLOCK`` columns at a time with a carry."""
    row = tl.program_id(0)
    carry = tl.zeros((1,), y_ptr.dtype.element_ty)
    for c in range(0, cols, BLOCK):
        offs = c + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * stride + offs, mask=offs < cols, other=0).to(y_ptr.dtype.element_ty)
        s = tl.cumsum(x, axis=0) + carry
        tl.store(y_ptr + row * stride + offs, s, mask=offs < cols)
        carry += tl.sum(x, axis=0)


# -- stencils -----------------------------------------------------------------


@triton.jit
def stencil1d(x_ptr, y_ptr, n, c0, c1, BLOCK: tl.constexpr, RADIUS: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    acc = tl.load(x_ptr + offs, mask=offs < n, other=0.0).to(tl.float32) * c0
    for k in tl.static_range(1, RADIUS + 1):
        left = offs - k
        right = offs + k
        acc += c1 / k * (tl.load(x_ptr + left, mask=(left >= 0) & (left < n), other=0.0).to(tl.float32)
                         + tl.load(x_ptr + right, mask=right < n, other=0.0).to(tl.float32))
    tl.store(y_ptr + offs, acc.to(y_ptr.dtype.element_ty), mask=offs < n)


@triton.jit
def stencil2d(x_ptr, y_ptr, h, w, c0, c1, BY: tl.constexpr, BX: tl.constexpr, NINE: tl.constexpr):
    py = tl.program_id(1)
    px = tl.program_id(0)
    ry = py * BY + tl.arange(0, BY)[:, None]
    rx = px * BX + tl.arange(0, BX)[None, :]
    inside = (ry < h) & (rx < w)
    acc = tl.load(x_ptr + ry * w + rx, mask=inside, other=0.0) * c0
    for dy in tl.static_range(-1, 2):
        for dx in tl.static_range(-1, 2):
            if (dy * dy + dx * dx == 1) or (NINE and dy != 0 and dx != 0):
                yy = ry + dy
                xx = rx + dx
                ok = (yy >= 0) & (yy < h) & (xx >= 0) & (xx < w)
                acc += c1 * tl.load(x_ptr + yy * w + xx, mask=ok, other=0.0)
    tl.store(y_ptr + ry * w + rx, acc, mask=inside)


# -- transposes ---------------------------------------------------------------


@triton.jit
def transpose_tiled(x_ptr, y_ptr, rows, cols, scale, BM: tl.constexpr, BN: tl.constexpr, SCALE: tl.constexpr):
    pm = tl.program_id(0)
    pn = tl.program_id(1)
    rm = pm * BM + tl.arange(0, BM)
    rn = pn * BN + tl.arange(0, BN)
    mask = (rm[:, None] < rows) & (rn[None, :] < cols)
    x = tl.load(x_ptr + rm[:, None] * cols + rn[None, :], mask=mask, other=0.0)
    if SCALE:
        x = (x.to(tl.float32) * scale).to(x_ptr.dtype.element_ty)
    tl.store(y_ptr + rn[None, :] * rows + rm[:, None], x, mask=mask)


# -- gathers and scatters -----------------------------------------------------


@triton.jit
def gather_rows(table_ptr, idx_ptr, out_ptr, n_idx, BI: tl.constexpr, D: tl.constexpr):
    """out[i, :] = table[idx[i], :] for ``BI`` indices per program (an embedding lookup)."""
    pid = tl.program_id(0)
    ri = pid * BI + tl.arange(0, BI)
    rd = tl.arange(0, D)
    idx = tl.load(idx_ptr + ri, mask=ri < n_idx, other=0)
    mask = (ri[:, None] < n_idx)
    v = tl.load(table_ptr + idx[:, None] * D + rd[None, :], mask=mask, other=0.0)
    tl.store(out_ptr + ri[:, None] * D + rd[None, :], v, mask=mask)


@triton.jit
def scatter_add(x_ptr, idx_ptr, out_ptr, n, BLOCK: tl.constexpr, WEIGHTED: tl.constexpr):
    """out[idx[i]] += x[i] (* x[i] when WEIGHTED) with global atomics."""
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    idx = tl.load(idx_ptr + offs, mask=mask, other=0)
    x = tl.load(x_ptr + offs, mask=mask, other=0)
    if WEIGHTED:
        x = x * x
    tl.atomic_add(out_ptr + idx, x, mask=mask)


# -- GEMV and tiled GEMM ------------------------------------------------------


@triton.jit
def gemv(a_ptr, x_ptr, y_ptr, m, k, BM: tl.constexpr, BK: tl.constexpr, BIAS: tl.constexpr):
    """y = A x (+ 1) with A row-major m x k; ``BM`` rows per program, K in ``BK`` chunks."""
    pid = tl.program_id(0)
    rm = pid * BM + tl.arange(0, BM)
    acc = tl.zeros((BM,), tl.float32)
    for k0 in range(0, k, BK):
        rk = k0 + tl.arange(0, BK)
        a = tl.load(a_ptr + rm[:, None] * k + rk[None, :], mask=(rm[:, None] < m) & (rk[None, :] < k), other=0.0)
        x = tl.load(x_ptr + rk, mask=rk < k, other=0.0)
        acc += tl.sum(a.to(tl.float32) * x.to(tl.float32)[None, :], axis=1)
    if BIAS:
        acc += 1.0
    tl.store(y_ptr + rm, acc.to(y_ptr.dtype.element_ty), mask=rm < m)


@triton.jit
def gemm_kloop(a_ptr, b_ptr, c_ptr, m, n, k, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
               EPILOGUE: tl.constexpr, IEEE: tl.constexpr):
    """C = epilogue(A B), A m x k, B k x n, both row-major; K walked in ``BK`` steps."""
    pm = tl.program_id(0)
    pn = tl.program_id(1)
    rm = pm * BM + tl.arange(0, BM)
    rn = pn * BN + tl.arange(0, BN)
    acc = tl.zeros((BM, BN), tl.float32)
    for k0 in range(0, k, BK):
        rk = k0 + tl.arange(0, BK)
        a = tl.load(a_ptr + rm[:, None] * k + rk[None, :], mask=(rm[:, None] < m) & (rk[None, :] < k), other=0.0)
        b = tl.load(b_ptr + rk[:, None] * n + rn[None, :], mask=(rk[:, None] < k) & (rn[None, :] < n), other=0.0)
        if IEEE:
            acc += tl.dot(a, b, input_precision="ieee")
        else:
            acc += tl.dot(a, b)
    if EPILOGUE == 1:
        acc = tl.maximum(acc, 0.0)
    elif EPILOGUE == 2:
        acc = acc * tl.sigmoid(acc)
    tl.store(c_ptr + rm[:, None] * n + rn[None, :], acc.to(c_ptr.dtype.element_ty),
             mask=(rm[:, None] < m) & (rn[None, :] < n))


# -- convolutions -------------------------------------------------------------


@triton.jit
def conv1d(x_ptr, w_ptr, y_ptr, c_in, length, BX: tl.constexpr, TAPS: tl.constexpr, RELU: tl.constexpr):
    """y[co, x] = sum_ci sum_t w[co, ci, t] x[ci, x + t] (valid padding); program (x block, co)."""
    px = tl.program_id(0)
    co = tl.program_id(1)
    rx = px * BX + tl.arange(0, BX)
    out_len = length - TAPS + 1
    acc = tl.zeros((BX,), tl.float32)
    for ci in range(0, c_in):
        for t in tl.static_range(0, TAPS):
            w = tl.load(w_ptr + (co * c_in + ci) * TAPS + t)
            acc += w * tl.load(x_ptr + ci * length + rx + t, mask=rx < out_len, other=0.0)
    if RELU:
        acc = tl.maximum(acc, 0.0)
    tl.store(y_ptr + co * out_len + rx, acc, mask=rx < out_len)


@triton.jit
def conv2d(x_ptr, w_ptr, y_ptr, c_in, h, w, BY: tl.constexpr, BX: tl.constexpr, KS: tl.constexpr):
    """3x3 or 5x5 'same' convolution, one output channel per grid z, ``c_in`` input channels."""
    px = tl.program_id(0)
    py = tl.program_id(1)
    co = tl.program_id(2)
    ry = py * BY + tl.arange(0, BY)[:, None]
    rx = px * BX + tl.arange(0, BX)[None, :]
    acc = tl.zeros((BY, BX), tl.float32)
    for ci in range(0, c_in):
        for dy in tl.static_range(0, KS):
            for dx in tl.static_range(0, KS):
                yy = ry + dy - KS // 2
                xx = rx + dx - KS // 2
                ok = (yy >= 0) & (yy < h) & (xx >= 0) & (xx < w)
                wt = tl.load(w_ptr + ((co * c_in + ci) * KS + dy) * KS + dx)
                acc += wt * tl.load(x_ptr + (ci * h + yy) * w + xx, mask=ok, other=0.0)
    tl.store(y_ptr + (co * h + ry) * w + rx, acc, mask=(ry < h) & (rx < w))


# -- attention ----------------------------------------------------------------


@triton.jit
def attention_fwd(q_ptr, k_ptr, v_ptr, o_ptr, seq_len, scale, BM: tl.constexpr, BN: tl.constexpr,
                  D: tl.constexpr, CAUSAL: tl.constexpr):
    """Online-softmax attention for one head; ``seq_len / BN`` key blocks per program."""
    pid = tl.program_id(0)
    rm = pid * BM + tl.arange(0, BM)
    rd = tl.arange(0, D)
    q = tl.load(q_ptr + rm[:, None] * D + rd[None, :])
    m_i = tl.full((BM,), -float("inf"), tl.float32)
    l_i = tl.zeros((BM,), tl.float32)
    acc = tl.zeros((BM, D), tl.float32)
    hi = seq_len
    if CAUSAL:
        hi = tl.minimum(seq_len, (pid + 1) * BM)
    for start in range(0, hi, BN):
        rn = start + tl.arange(0, BN)
        kt = tl.load(k_ptr + rn[None, :] * D + rd[:, None])
        s = tl.dot(q, kt) * scale
        if CAUSAL:
            s = tl.where(rm[:, None] >= rn[None, :], s, -float("inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        alpha = tl.exp(m_i - m_new)
        p = tl.exp(s - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, axis=1)
        v = tl.load(v_ptr + rn[:, None] * D + rd[None, :])
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m_i = m_new
    tl.store(o_ptr + rm[:, None] * D + rd[None, :], acc / l_i[:, None])


# -- histograms ---------------------------------------------------------------


@triton.jit
def histogram_atomic(x_ptr, bins_ptr, n, iters, BLOCK: tl.constexpr, NUM_BINS: tl.constexpr,
                     LOCAL: tl.constexpr):
    """Count values in [0, NUM_BINS): per element atomics, or a per-program
    ``tl.histogram`` then one atomic per bin (LOCAL); ``iters`` blocks per program."""
    pid = tl.program_id(0)
    if LOCAL:
        h = tl.zeros((NUM_BINS,), tl.int32)
        for i in range(0, iters):
            offs = (pid * iters + i) * BLOCK + tl.arange(0, BLOCK)
            x = tl.load(x_ptr + offs, mask=offs < n, other=0)
            h += tl.histogram(x, NUM_BINS, mask=offs < n)
        tl.atomic_add(bins_ptr + tl.arange(0, NUM_BINS), h)
    else:
        for i in range(0, iters):
            offs = (pid * iters + i) * BLOCK + tl.arange(0, BLOCK)
            x = tl.load(x_ptr + offs, mask=offs < n, other=0)
            tl.atomic_add(bins_ptr + x, 1, mask=offs < n)
