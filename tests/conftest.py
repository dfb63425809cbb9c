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
