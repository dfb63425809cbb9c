"""Which corpus kernels the fast tier sweeps.

Tests that check a property on *every* corpus kernel run the whole corpus
only in the slow tier (``.ci/run`` runs both); the everyday fast tier
(``-m "not slow and not gpu"``) runs them on :data:`FAST_CORPUS`: one or two
kernels per producer and shape (single-thread gemm tiles, nvcc kernels with
shared memory, barriers and warp shuffles, Triton element-wise, reduction
and ``mma`` kernels), small enough that a sweep takes seconds.
"""

from __future__ import annotations

import pytest

FAST_CORPUS = (
    "gemm_tile_2x2x4", "gemm_tile_8x8x8",
    "cuda_saxpy", "cuda_reduce_sum_smem", "cuda_softmax_row", "cuda_scan_warp_shuffle",
    "triton_vector_add", "triton_softmax_row", "triton_matmul_f16",
)


def is_fast(spec) -> bool:
    return spec.id in FAST_CORPUS


def corpus_params(specs) -> list:
    """``pytest.param`` per kernel (id = kernel id), marked ``slow`` unless in :data:`FAST_CORPUS`."""
    return [pytest.param(k, id=k.id, marks=() if is_fast(k) else (pytest.mark.slow,)) for k in specs]
