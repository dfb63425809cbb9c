"""Search over pass pipelines: greedy, beam, random and exhaustive.

The graph searched: a node is a :class:`~ptxopt.search.state.State` (a
kernel after a pipeline), an edge appends one legal pass (the mask comes
from the pass API; see :mod:`ptxopt.search.state`); the actions are
:mod:`ptxopt.search.actions`. Every strategy measures
states through a :class:`~ptxopt.search.meter.Meter` (the evaluator, with
evaluations counted for equal-budget comparisons) and records trajectories
(:mod:`ptxopt.search.trajectory`) for the learning layer. Each strategy is
also a generator (:mod:`ptxopt.search.stepwise`), so that ``search_many``
can search several kernels in lockstep, their candidates sharing one
evaluation stream (:mod:`ptxopt.evaluate.stream`).

Library use::

    from ptxopt.evaluate import Candidate
    from ptxopt.search import SearchConfig, search_kernel

    r = search_kernel(Candidate.from_corpus("gemm_tile_4x4x4"), SearchConfig("greedy"))
    r.pipeline, r.baseline_cycles, r.best_cycles, r.improvement_pct, r.evaluations, r.steps
"""

from ptxopt.search.meter import BudgetExhausted, EvalOptions, Meter
from .run import STRATEGIES, KernelResult, SearchConfig, search_kernel, search_many, summarize
from .actions import ACTIONS, N_ACTIONS, STOP, STOP_INDEX, families
from .state import Move, State, observation_names
from .trajectory import STEP_COST, Step, episodes, read_jsonl, reward, write_jsonl

__all__ = [
    "BudgetExhausted", "EvalOptions", "Meter", "STRATEGIES", "KernelResult", "SearchConfig", "search_kernel",
    "search_many", "summarize", "ACTIONS", "FAMILIES", "families", "N_ACTIONS", "STOP", "STOP_INDEX", "Move", "State", "observation_names",
    "STEP_COST", "Step", "episodes", "read_jsonl", "reward", "write_jsonl",
]


def __getattr__(name: str):
    if name == "FAMILIES":  # computed on first use (see ptxopt.search.actions.families)
        return families()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
