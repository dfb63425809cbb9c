"""Per-candidate progress: every evaluation of an in-process search is heard, with its state and result."""

from ptxopt.evaluate import Candidate
from ptxopt.search import SearchConfig
from ptxopt.search.meter import _LISTENERS, evaluation_progress
from ptxopt.search.run import search_kernel
from ptxopt.search.meter import EvalOptions


def test_each_evaluation_is_reported_once(tmp_path):
    heard = []
    config = SearchConfig("greedy", max_steps=1, options=EvalOptions(cache=tmp_path / "c.sqlite"))
    with evaluation_progress(lambda state, r: heard.append((str(state.pipeline), r.status, r.timings.get("total")))):
        res = search_kernel(Candidate.from_corpus("gemm_tile_2x2x2"), config)
    assert not _LISTENERS  # the listener is gone after the block
    assert len(heard) == res.evaluations > 1
    assert heard[0][0] == "" and len({p for p, _, _ in heard}) == len(heard)
    assert all(t is not None for _, status, t in heard if status == "ok")
