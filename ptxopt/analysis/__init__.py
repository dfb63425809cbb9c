"""Analyses of PTX functions for passes and the learning layer.

One concept per module:

* :mod:`.cfg` - basic blocks, the control-flow graph, loops, where each
  instruction lives in the nested body;
* :mod:`.defuse` - reaching definitions, def-use chains, liveness;
* :mod:`.classify` - instruction roles (pure, load, store, ordering point);
* :mod:`.alias` - the may-alias rules for memory accesses;
* :mod:`.dag` - the per-block dependency DAG, critical paths, schedule checks;
* :mod:`.rough_latency` - the rough latency table;
* :mod:`.pressure` - register pressure by class;
* :mod:`.features` - the kernel feature vector;
* :mod:`.function` - a per-function cache of all of the above;
* :mod:`.manager` - what passes ask for their analyses: the memos of the
  CFG, loops, DAGs, dependence graphs and printed text, their invalidation
  (what a pass preserves) and read-only results;
* :mod:`.summary` - the ``ptxopt stats`` document.

All results are deterministic: same module in, same numbers out.
"""

from __future__ import annotations

#: public name -> the module that defines it; imported on first use (PEP 562):
#: ``import ptxopt.analysis.alias`` runs this file, and a pass that needs the
#: alias rules must not pay for the DAG, liveness, features and summary too
#: (the start-up of ``ptxopt eval``)
_LAZY = {
    **dict.fromkeys(("ALIASING_SPACES", "Access", "may_alias", "noalias_params", "overlapping_symbols",
                     "pointer_roots"), "ptxopt.analysis.alias"),
    **dict.fromkeys(("CFG", "BasicBlock", "build_cfg", "get_at", "instr_defs_uses", "set_at"),
                    "ptxopt.analysis.cfg"),
    "mem_space": "ptxopt.ptx.opcodes",
    "role": "ptxopt.ptx.operand_facts",
    **dict.fromkeys(("KIND_PRIORITY", "CriticalPath", "block_dag", "block_dags", "build_dag", "critical_path",
                     "depths", "heights", "topological_orders_respect", "unit_latency"), "ptxopt.analysis.dag"),
    **dict.fromkeys(("Liveness", "ReachingDefs", "liveness", "reaching_definitions"), "ptxopt.analysis.defuse"),
    **dict.fromkeys(("FEATURE_NAMES", "feature_vector", "function_features", "kernel_features"),
                    "ptxopt.analysis.features"),
    "FunctionAnalysis": "ptxopt.analysis.function",
    **dict.fromkeys(("LATENCY", "estimated_latency", "latency_class"), "ptxopt.analysis.rough_latency"),
    **dict.fromkeys(("RegisterPressure", "register_pressure"), "ptxopt.analysis.pressure"),
}


def __getattr__(name: str):
    mod = _LAZY.get(name)
    if mod is None:
        raise AttributeError(f"module 'ptxopt.analysis' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(mod), name)
    globals()[name] = value  # the next look-up is a plain one
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY))


# ``summary`` is also the name of its submodule: importing ``ptxopt.analysis.summary``
# anywhere rebinds the package attribute to the module, so a lazy ``summary`` would
# turn into a module under ``from ptxopt.analysis import summary``.  Bound here,
# after the submodule import, it stays the function (the submodule imports the
# analyses it uses when it runs).
from ptxopt.analysis.summary import function_summary, summary  # noqa: E402


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
