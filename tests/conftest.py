"""Fixtures shared by several test modules.

The learning-layer tests (``test_rl_*``) measure the same few small modules
again and again; they share one evaluation cache per session (under pytest's
base temporary directory, so each xdist worker has its own), which keeps the
fast tier fast without letting one module see another's results as anything
but cache hits.
"""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def rl_cache(tmp_path_factory):
    """Path of the evaluation cache shared by the learning-layer tests."""
    d = tmp_path_factory.getbasetemp() / "rl_eval_cache"
    d.mkdir(exist_ok=True)
    return d / "eval.sqlite"


@pytest.fixture(scope="session")
def rl_options(rl_cache):
    """:class:`~ptxopt.search.measure.EvalOptions` on :func:`rl_cache`."""
    from ptxopt.search.measure import EvalOptions

    return EvalOptions(cache=rl_cache)
