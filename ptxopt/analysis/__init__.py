"""Analyses of PTX functions for passes and the learning layer.

One concept per module:

* :mod:`.cfg` - basic blocks, the control-flow graph, loops, where each
  instruction lives in the nested body;
* :mod:`.defuse` - reaching definitions, def-use chains, liveness;
* :mod:`.classify` - instruction roles (pure, load, store, ordering point);
* :mod:`.alias` - the may-alias rules for memory accesses;
* :mod:`.dag` - the per-block dependency DAG, critical paths, schedule checks;
* :mod:`.latency` - the rough latency table;
* :mod:`.pressure` - register pressure by class;
* :mod:`.features` - the kernel feature vector;
* :mod:`.function` - a per-function cache of all of the above;
* :mod:`.summary` - the ``ptxopt stats`` document.

All results are deterministic: same module in, same numbers out.
"""

from ptxopt.analysis.alias import (
    ALIASING_SPACES, Access, may_alias, noalias_params, overlapping_symbols, pointer_roots,
)
from ptxopt.analysis.cfg import CFG, BasicBlock, build_cfg, get_at, instr_defs_uses, set_at
from ptxopt.opcodes import mem_space
from ptxopt.operand_facts import role
from ptxopt.analysis.dag import (
    KIND_PRIORITY, CriticalPath, block_dag, block_dags, build_dag, critical_path, depths, heights,
    topological_orders_respect, unit_latency,
)
from ptxopt.analysis.defuse import Liveness, ReachingDefs, liveness, reaching_definitions
from ptxopt.analysis.features import FEATURE_NAMES, feature_vector, function_features, kernel_features
from ptxopt.analysis.function import FunctionAnalysis
from ptxopt.analysis.latency import LATENCY, estimated_latency, latency_class
from ptxopt.analysis.pressure import RegisterPressure, register_pressure
from ptxopt.analysis.summary import function_summary, summary

__all__ = [
    "ALIASING_SPACES", "Access", "may_alias", "noalias_params", "overlapping_symbols", "pointer_roots",
    "CFG", "BasicBlock", "build_cfg", "get_at", "instr_defs_uses", "set_at",
    "mem_space", "role",
    "KIND_PRIORITY", "CriticalPath", "block_dag", "block_dags", "build_dag", "critical_path",
    "depths", "heights", "topological_orders_respect", "unit_latency",
    "Liveness", "ReachingDefs", "liveness", "reaching_definitions",
    "FEATURE_NAMES", "feature_vector", "function_features", "kernel_features",
    "FunctionAnalysis",
    "LATENCY", "estimated_latency", "latency_class",
    "RegisterPressure", "register_pressure",
    "function_summary", "summary",
]
