"""Fixtures shared by several test modules.

The learning-layer tests (``test_rl_*``) measure the same few small modules
again and again; they share one evaluation cache per session (under pytest's
base temporary directory, so each xdist worker has its own), which keeps the
fast tier fast without letting one module see another's results as anything
but cache hits.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

# tests/ mirrors the packages (tests/sim/, tests/passes/, ...); a test may import another's helpers by module
# name (``from test_floors import outside``) whichever folder pytest reached first, so every folder is on the path
# (appended: the folder pytest puts first for the test it imports still wins)
_HERE = Path(__file__).resolve().parent
sys.path.extend(str(d) for d in sorted(_HERE.iterdir())
                if d.is_dir() and any(d.glob("test_*.py")) and str(d) not in sys.path)


@pytest.fixture(scope="session")
def rl_cache(tmp_path_factory):
    """Path of the evaluation cache shared by the learning-layer tests."""
    d = tmp_path_factory.getbasetemp() / "rl_eval_cache"
    d.mkdir(exist_ok=True)
    return d / "eval.sqlite"


@pytest.fixture(scope="session")
def rl_options(rl_cache):
    """:class:`~ptxopt.search.meter.EvalOptions` on :func:`rl_cache`."""
    from ptxopt.search.meter import EvalOptions

    return EvalOptions(cache=rl_cache)


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config):
    """``-n N`` without ``--dist`` distributes by work stealing (pytest-xdist's
    ``worksteal``): an idle worker takes the tail of a busy one's queue, so
    the minutes-long corpus sweeps, ordered first (:func:`_heavy_first`),
    do not end the run on one worker while the other waits."""
    opt = config.option
    if getattr(opt, "numprocesses", None) and getattr(opt, "dist", None) == "no" and not opt.distload:
        opt.dist = "worksteal"


#: single tests of the slow tier that each take 20-90 s (``--durations``, 2 shared cores): started first
#: under xdist, so that none of them starts last and ends the run alone (a stale name only loses its place)
LONGEST = (
    "tests/equivalence/test_prove_corpus.py::test_every_corpus_mutant_is_never_proved[cuda_attention_small]",
    "tests/equivalence/test_smt_recheck.py::test_pass_matrix_proofs_survive_the_solver",
    "tests/equivalence/test_prove_corpus.py::test_every_pass_on_every_corpus_kernel[gen_conv2d_00]",
    "tests/evaluate/test_eval_prefix.py::test_a_beam_search_is_the_same_with_and_without_the_memo",
    "tests/sim/test_sim_steady.py::test_no_corpus_loop_kernel_is_truncated_and_steady_state_matches_the_full_replay",
    "tests/testing/test_fuzz_passes.py::test_every_pass_is_refused_or_equal_more",
    "tests/equivalence/test_prove_corpus.py::test_every_corpus_mutant_is_never_proved[gen_transpose_tiled_01]",
    "tests/project/test_install_wheel.py::test_wheel_installs_and_runs_the_quick_start_outside_the_repository",
    "tests/testing/test_loop_mutant_reviews.py::test_flash_causal_dropped_guard_is_not_equal",
)


def _heavy_first(items):
    """Under pytest-xdist, the longest single tests (:data:`LONGEST`, longest
    first), then the pass matrix, each pass's corpus sweep (the
    longest tests) right before its fast-tier check (which then finds its
    cells computed, when both run on one worker: test_pass_matrix.py), then
    the rest of the slow tier, then the fast tier, each group in collection
    order: a long test started last would end the run alone (worksteal
    balances the rest). Every worker collects the same order, as xdist
    requires."""
    import os

    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return
    passes: dict[str, int] = {}
    longest = {nodeid: k for k, nodeid in enumerate(LONGEST)}

    def rank(item):
        if item.nodeid in longest:
            return (0, longest[item.nodeid] - len(longest), False)
        slow = item.get_closest_marker("slow") is not None
        callspec = getattr(item, "callspec", None)
        module = getattr(getattr(item, "module", None), "__name__", "")
        if module == "test_pass_matrix" and callspec and "pass_name" in callspec.params:
            return (0, passes.setdefault(callspec.params["pass_name"], len(passes)), not slow)
        return (1 if slow else 2, 0, False)

    items.sort(key=rank)  # stable


def pytest_collection_modifyitems(config, items):
    """Tier the generated corpus families in every parametrized test (see
    tests/corpus_tiers.py): a test whose parameters name a generated kernel
    outside the fast slice is marked slow, or deselected when outside the
    slow slice too (unless PTXOPT_FULL_CORPUS=1)."""
    from corpus_tiers import full_corpus, generated_tier

    rank = {"fast": 0, "slow": 1, "full": 2}
    keep, dropped = [], []
    for item in items:
        callspec = getattr(item, "callspec", None)
        tier = None
        for value in (callspec.params.values() if callspec else ()):
            kid = getattr(value, "id", value)
            t = generated_tier(kid) if isinstance(kid, str) else None
            if t is not None and (tier is None or rank[t] > rank[tier]):
                tier = t
        if tier == "full" and not full_corpus():
            dropped.append(item)
            continue
        if tier in ("slow", "full"):
            item.add_marker(pytest.mark.slow)
        keep.append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = keep
    _heavy_first(items)
