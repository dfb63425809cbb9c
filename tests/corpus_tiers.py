"""Which corpus kernels the fast tier sweeps.

Tests that check a property on *every* corpus kernel run the whole corpus
only in the slow tier (``.ci/run`` runs both); the everyday fast tier
(``-m "not slow and not gpu"``) runs them on :data:`FAST_CORPUS`: one or two
kernels per producer and shape (single-thread gemm tiles, nvcc kernels with
shared memory, barriers and warp shuffles, Triton element-wise, reduction
and ``mma`` kernels), small enough that a sweep takes seconds.

The generated families (``corpus/families/``, hundreds of kernels) enter
corpus-wide tests through tiers of their own, applied to every parametrized
test by ``tests/conftest.py`` (a test that takes a ``KernelSpec`` or a
kernel id): the cheapest kernel of each template group and compiler
(check-launch threads x PTX statements, if below :data:`FAST_COST`) runs in
the fast tier (:func:`generated_tier` ``"fast"``), the first
:data:`SLOW_PER_FAMILY` of each family in the slow tier, and the rest only with
``PTXOPT_FULL_CORPUS=1``. Tests that loop over the corpus inside one test
take :func:`fast_kernels` or :func:`slow_kernels` instead of the whole manifest.
"""

from __future__ import annotations

import os
from functools import lru_cache

import pytest

FAST_CORPUS = (
    "gemm_tile_2x2x4", "gemm_tile_8x8x8",
    "cuda_saxpy", "cuda_reduce_sum_smem", "cuda_softmax_row", "cuda_scan_warp_shuffle",
    "triton_vector_add", "triton_softmax_row", "triton_matmul_f16",
)

#: generated kernels per family that the slow tier sweeps
SLOW_PER_FAMILY = 2
#: a group's cheapest generated kernel joins the fast tier only below this
#: cost (check-launch threads x PTX statements): the attention blocks
#: (cheapest 61k; 14 s per reorder pass under the equivalence check) stay slow
FAST_COST = 20_000


@lru_cache(maxsize=1)
def _generated_tiers() -> dict[str, str]:
    """Generated kernel id -> "fast" | "slow" | "full" (manifest order decides)."""
    from ptxopt.kernels.corpus import load_manifest

    generated = [k for k in load_manifest() if k.generated]
    # (group, compiler) -> (cost, index): the cheapest kernel of each group per compiler (Triton's and
    # nvcc's PTX of one template differ: loads, loops, atomics)
    smallest: dict[tuple[str, str], tuple[int, int]] = {}
    for i, k in enumerate(generated):
        cost = (k.launch.threads * k.ptx_text().count(";"), i)  # threads x statements: what interpreting costs
        key = (k.group, k.compiler)
        smallest[key] = min(smallest.get(key, cost), cost)
    fast = {generated[i].id for cost, i in smallest.values() if cost <= FAST_COST}
    tiers, families = {}, {}
    for k in generated:
        families[k.family] = families.get(k.family, 0) + 1
        if k.id in fast:
            tiers[k.id] = "fast"
        elif families[k.family] <= SLOW_PER_FAMILY:
            tiers[k.id] = "slow"
        else:
            tiers[k.id] = "full"
    return tiers


def generated_tier(kernel_id: str) -> str | None:
    """The tier of a generated kernel; None for a hand-written one."""
    return _generated_tiers().get(kernel_id)


def full_corpus() -> bool:
    """``PTXOPT_FULL_CORPUS=1``: every generated kernel, not only the tiers' slices."""
    return bool(os.environ.get("PTXOPT_FULL_CORPUS"))


def is_fast(spec) -> bool:
    return spec.id in FAST_CORPUS or generated_tier(spec.id) == "fast"


def fast_kernels(specs) -> list:
    """*specs* less the generated kernels outside the fast slice: for tests that
    loop over the corpus inside one test."""
    return [k for k in specs if generated_tier(k.id) in (None, "fast")]


def slow_kernels(specs) -> list:
    """*specs* less the generated kernels outside the fast and slow slices
    (all of them with ``PTXOPT_FULL_CORPUS=1``): for slow tests that loop
    over the corpus inside one test."""
    return list(specs) if full_corpus() else [k for k in specs if generated_tier(k.id) != "full"]


#: the SMT re-check (tests/equivalence/test_smt_recheck.py) takes every this-many-th kernel of the slow slice
SMT_RECHECK_EVERY = 3


def smt_recheck_kernels(specs) -> list:
    """The corpus kernels whose pass-matrix pairs the SMT re-check proves and
    re-checks (every :data:`SMT_RECHECK_EVERY`-th of :func:`slow_kernels`).
    It also holds their verdicts to what test_prove_corpus's sweep asserts
    (``proved`` or ``inconclusive``, with a reason), so that sweep leaves them
    to it when a solver is installed: one proof per pair, not two."""
    return slow_kernels(specs)[::SMT_RECHECK_EVERY]


def corpus_params(specs) -> list:
    """``pytest.param`` per kernel (id = kernel id), marked ``slow`` unless in :data:`FAST_CORPUS`
    (generated kernels: see the module docstring; conftest applies their tiers)."""
    return [pytest.param(k, id=k.id, marks=() if is_fast(k) or generated_tier(k.id) else (pytest.mark.slow,))
            for k in specs]
