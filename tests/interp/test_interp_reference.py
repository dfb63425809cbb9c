"""Corpus kernels interpreted and checked against numpy.

Exact where the kernel's arithmetic is exact or reproducible (gathers,
transposes, integer scans and histograms, fma chains in k order), to a
tolerance where the kernel's reduction order or special functions differ
from numpy's. These checks are what make the interpreter's semantics
(fragment layouts, shuffles, barriers, atomics) trustworthy: a wrong lane
order gives a wrong matrix, not a small error.
"""

from __future__ import annotations

import numpy as np
import pytest

from ptxopt.kernels.corpus import get, select
from ptxopt.interp import launch_from_manifest


def run(kid, seed=0, flavour="random"):
    return launch_from_manifest(get(kid), seed, flavour=flavour)


def fma_chain(A, B):
    """C = A @ B with one correctly rounded fma per k step, in k order."""
    from ptxopt.interp import fp

    m, k = A.shape
    n = B.shape[1]
    C = np.zeros((m, n), np.float32)
    for kk in range(k):
        a = np.broadcast_to(A[:, kk:kk + 1], (m, n)).ravel()
        b = np.broadcast_to(B[kk:kk + 1, :], (m, n)).ravel()
        C = fp.fma_f32(a, b, C.ravel()).reshape(m, n)
    return C


@pytest.mark.parametrize("kid", [k.id for k in select("gemm_tile")])
def test_gemm_tile_matches_fma_chain(kid):
    spec = get(kid)
    s = spec.shape_dict
    ins, outs = launch_from_manifest(spec, 1)
    A = ins["A"].reshape(s["m"], s["k"])
    B = ins["B"].reshape(s["k"], s["n"])
    want = fma_chain(A, B)
    assert np.array_equal(outs["C"].view(np.uint32), want.ravel().view(np.uint32))


def test_vector_add_exact():
    for kid in ("cuda_vector_add", "triton_vector_add", "triton_vector_add_nodiv"):
        ins, outs = run(kid)
        key = "c" if "cuda" in kid else "out_ptr"
        a = ins["a" if "cuda" in kid else "x_ptr"]
        b = ins["b" if "cuda" in kid else "y_ptr"]
        assert np.array_equal(outs[key], a + b), kid


def test_half2_add_exact():
    ins, outs = run("cuda_vector_add_half2")
    assert np.array_equal(outs["c"], ins["a"] + ins["b"])


def test_saxpy_inout():
    ins, outs = run("cuda_saxpy")
    want = (np.float32(2.5) * ins["x"].astype(np.float64) + ins["y"]).astype(np.float32)
    assert np.array_equal(outs["y"], want)  # fma(alpha, x, y): exact product, one rounding


def test_histograms_exact():
    ins, outs = run("cuda_histogram_atomic")
    assert np.array_equal(outs["bins"], np.bincount(ins["data"], minlength=256).astype(np.uint32))
    ins, outs = run("triton_histogram")
    assert np.array_equal(outs["bins_ptr"], np.bincount(ins["x_ptr"], minlength=64).astype(np.int32))


def test_gathers_and_transposes_exact():
    ins, outs = run("cuda_embedding_gather")
    assert np.array_equal(outs["out"].reshape(32, 32), ins["table"].reshape(128, 32)[ins["ids"]])
    ins, outs = run("triton_embedding")
    assert np.array_equal(outs["out_ptr"].reshape(32, 32), ins["table_ptr"].reshape(128, 32)[ins["ids_ptr"]])
    for kid, i, o in (("cuda_transpose_smem", "in", "out"), ("triton_transpose", "in_ptr", "out_ptr")):
        ins, outs = run(kid)
        assert np.array_equal(outs[o].reshape(64, 64), ins[i].reshape(64, 64).T), kid


def test_integer_scan_exact():
    ins, outs = run("cuda_scan_warp_shuffle")
    x = ins["in"].reshape(2, 256)
    want = np.cumsum(x, axis=1) - x  # exclusive, per block
    assert np.array_equal(outs["out"].reshape(2, 256), want)


def test_float_scans_close():
    ins, outs = run("cuda_scan_block")
    x = ins["in"].reshape(4, 256).astype(np.float64)
    np.testing.assert_allclose(outs["out"].reshape(4, 256), np.cumsum(x, axis=1), rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(outs["block_sums"], x.sum(axis=1), rtol=1e-5, atol=1e-4)
    ins, outs = run("triton_cumsum")
    x = ins["x_ptr"].reshape(4, 256).astype(np.float64)
    np.testing.assert_allclose(outs["out_ptr"].reshape(4, 256), np.cumsum(x, axis=1), rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(outs["block_sums_ptr"], x.sum(axis=1), rtol=1e-5, atol=1e-4)


def test_reductions_close():
    ins, outs = run("cuda_reduce_sum_smem")
    np.testing.assert_allclose(outs["partial"], ins["in"].reshape(4, 512).sum(axis=1), rtol=1e-5, atol=1e-4)
    ins, outs = run("cuda_reduce_max_smem")
    assert np.array_equal(outs["partial"], ins["in"].reshape(4, 256).max(axis=1))
    ins, outs = run("cuda_reduce_sum_warp_shuffle")
    np.testing.assert_allclose(outs["out"][0], ins["in"].astype(np.float64).sum(), rtol=1e-5, atol=1e-3)
    ins, outs = run("triton_reduce_sum")
    np.testing.assert_allclose(outs["partial_ptr"], ins["x_ptr"].reshape(4, 512).sum(axis=1), rtol=1e-5, atol=1e-4)
    ins, outs = run("triton_reduce_max")
    x = ins["x_ptr"]
    want = [x[i * 512:min(2000, (i + 1) * 512)].max() for i in range(4)]
    assert np.array_equal(outs["partial_ptr"], np.array(want, np.float32))


def test_matmuls_close():
    for kid, a, b, c, n in (("cuda_matmul_naive", "A", "B", "C", 32),
                            ("cuda_matmul_tiled_smem", "A", "B", "C", 32),
                            ("triton_matmul_f32_ieee", "a_ptr", "b_ptr", "c_ptr", 32)):
        ins, outs = run(kid)
        want = ins[a].reshape(n, n).astype(np.float64) @ ins[b].reshape(n, n)
        np.testing.assert_allclose(outs[c].reshape(n, n), want, rtol=1e-5, atol=1e-4, err_msg=kid)


def test_gemv_close():
    ins, outs = run("cuda_gemv_warp")
    want = ins["A"].reshape(32, 128).astype(np.float64) @ ins["x"]
    np.testing.assert_allclose(outs["y"], want, rtol=1e-5, atol=1e-4)


def test_tensor_core_matmul_f16():
    """ldmatrix (plain and .trans) + mma.m16n8k16 fragments + cp.async."""
    ins, outs = run("triton_matmul_f16")
    A = ins["a_ptr"].reshape(64, 64).astype(np.float64)
    B = ins["b_ptr"].reshape(64, 64).astype(np.float64)
    got = outs["c_ptr"].reshape(64, 64).astype(np.float64)
    np.testing.assert_allclose(got, A @ B, rtol=2e-3, atol=2e-2)


def _softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def test_attention_close():
    ins, outs = run("cuda_attention_small")
    Q, K, V = (ins[n].reshape(64, 16).astype(np.float64) for n in "QKV")
    np.testing.assert_allclose(outs["out"].reshape(64, 16), _softmax(Q @ K.T * 0.25) @ V, rtol=1e-4, atol=1e-5)
    ins, outs = run("triton_attention")
    Q, K, V = (ins[n].reshape(64, 16).astype(np.float64) for n in ("q_ptr", "k_ptr", "v_ptr"))
    np.testing.assert_allclose(outs["o_ptr"].reshape(64, 16), _softmax(Q @ K.T * 0.25) @ V, rtol=5e-3, atol=5e-3)


def test_softmax_and_norms_close():
    ins, outs = run("cuda_softmax_row")
    np.testing.assert_allclose(outs["y"].reshape(8, 256), _softmax(ins["x"].reshape(8, 256).astype(np.float64)),
                               rtol=1e-5, atol=1e-7)
    ins, outs = run("cuda_softmax_warp")
    np.testing.assert_allclose(outs["y"].reshape(16, 128), _softmax(ins["x"].reshape(16, 128).astype(np.float64)),
                               rtol=1e-5, atol=1e-7)
    ins, outs = run("triton_softmax_row")
    np.testing.assert_allclose(outs["y_ptr"].reshape(8, 200), _softmax(ins["x_ptr"].reshape(8, 200).astype(np.float64)),
                               rtol=1e-5, atol=1e-7)
    for kid, x, y, w, b, cols in (("cuda_layernorm_row", "x", "y", "gamma", "beta", 512),
                                  ("triton_layernorm_row", "x_ptr", "y_ptr", "w_ptr", "b_ptr", 512)):
        ins, outs = run(kid)
        X = ins[x].reshape(-1, cols).astype(np.float64)
        mu = X.mean(axis=1, keepdims=True)
        var = X.var(axis=1, keepdims=True)
        want = (X - mu) / np.sqrt(var + 1e-5) * ins[w] + ins[b]
        np.testing.assert_allclose(outs[y].reshape(-1, cols), want, rtol=1e-4, atol=1e-4, err_msg=kid)


def test_cross_entropy_close():
    for kid, lg, lb, ls in (("cuda_cross_entropy", "logits", "labels", "loss"),
                            ("triton_cross_entropy", "logits_ptr", "labels_ptr", "loss_ptr")):
        ins, outs = run(kid)
        z = ins[lg].reshape(32, 100).astype(np.float64)
        m = z.max(axis=1)
        want = np.log(np.exp(z - m[:, None]).sum(axis=1)) + m - z[np.arange(32), ins[lb]]
        np.testing.assert_allclose(outs[ls], want, rtol=1e-5, atol=1e-5, err_msg=kid)


def test_elementwise_close():
    ins, outs = run("cuda_relu")
    assert np.array_equal(outs["out"], np.maximum(ins["x"], 0))
    ins, outs = run("cuda_relu_vec4")
    assert np.array_equal(outs["out"], np.maximum(ins["x"], 0))
    ins, outs = run("triton_relu_scale")
    want = np.maximum(ins["x_ptr"], 0).astype(np.float64) * 0.5 + ins["res_ptr"]
    np.testing.assert_allclose(outs["out_ptr"], want, rtol=1e-6)
    from math import erf

    ins, outs = run("cuda_gelu_erf")
    x = ins["x"].astype(np.float64)
    want = 0.5 * x * (1 + np.vectorize(erf)(x / np.sqrt(2)))
    np.testing.assert_allclose(outs["out"], want, rtol=1e-5, atol=1e-6)
    ins, outs = run("cuda_gelu_tanh")
    x = ins["x"].astype(np.float64)
    want = 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))
    np.testing.assert_allclose(outs["out"], want, rtol=1e-4, atol=1e-5)
    ins, outs = run("triton_bias_gelu")  # tanh approximation
    x = ins["x_ptr"].reshape(16, 128).astype(np.float64) + ins["bias_ptr"]
    want = 0.5 * x * (1 + np.tanh(0.7978845608028654 * (x + 0.044715 * x ** 3)))
    np.testing.assert_allclose(outs["out_ptr"].reshape(16, 128), want, rtol=1e-4, atol=1e-5)


def test_batchnorm_close():
    ins, outs = run("cuda_batchnorm_infer")
    c = (np.arange(1024) // 64) % 8
    x = ins["x"].astype(np.float64)
    want = (x - ins["running_mean"][c]) / np.sqrt(ins["running_var"][c] + 1e-5) * ins["gamma"][c] + ins["beta"][c]
    np.testing.assert_allclose(outs["y"], want, rtol=1e-5, atol=1e-5)
