"""All analyses of one function, computed lazily and at most once.

Features, ``summary`` and passes often need several analyses of the same
function (the CFG feeds liveness, the DAGs, the pressure...). This bundle
computes each on first use and caches it. It reads the function as it is
when an analysis is first computed: after rewriting a function, make a new
``FunctionAnalysis``.
"""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING

from ptxopt.analysis.cfg import CFG
from ptxopt.analysis.dag import CriticalPath, critical_path
from ptxopt.analysis.defuse import Liveness, ReachingDefs, liveness, reaching_definitions
from ptxopt.analysis.rough_latency import estimated_latency
from ptxopt.analysis.pressure import RegisterPressure, register_pressure
from ptxopt.ptx.ir import Function

if TYPE_CHECKING:
    import networkx as nx


class FunctionAnalysis:
    def __init__(self, fn: Function) -> None:
        if fn.body is None:
            raise ValueError(f"function {fn.name} has no body")
        self.function = fn

    @cached_property
    def cfg(self) -> CFG:
        return CFG(self.function)

    @cached_property
    def loops(self):
        """Natural loops with their induction variables and trip counts
        (:func:`ptxopt.analysis.loops.find_loops`)."""
        from ptxopt.analysis.loops import find_loops

        return find_loops(self.cfg)

    @cached_property
    def reaching(self) -> ReachingDefs:
        return reaching_definitions(self.cfg)

    @cached_property
    def liveness(self) -> Liveness:
        return liveness(self.cfg)

    @cached_property
    def pressure(self) -> RegisterPressure:
        return register_pressure(self.cfg, self.liveness)

    @cached_property
    def dags(self) -> list[nx.DiGraph]:
        """One frozen DAG per block, remembered by the default analysis manager
        (a search state's features ask for the same blocks again)."""
        from ptxopt.analysis.manager import default_manager

        return default_manager().block_dags(self.cfg)

    @cached_property
    def critical_paths(self) -> list[CriticalPath]:
        """Unit-latency critical path of each block."""
        return [critical_path(d) for d in self.dags]

    @cached_property
    def latency_paths(self) -> list[CriticalPath]:
        """Critical path of each block weighted by :func:`estimated_latency`."""
        return [critical_path(d, estimated_latency) for d in self.dags]
