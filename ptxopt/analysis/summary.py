"""``summary(module)``: the JSON document ``ptxopt stats`` prints.

One record per ``.entry`` with a body, keyed by name, built from one
:class:`~ptxopt.analysis.function.FunctionAnalysis` per entry so every
analysis runs once. Only ints, floats, strings, lists and dicts: it goes
straight through ``json.dumps``.

The analyses are imported when a summary is made: ``summary`` is also this
module's name, so :mod:`ptxopt.analysis` binds the function at its import,
after this module, and that import must stay cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ptxopt.analysis.function import FunctionAnalysis
    from ptxopt.ptx.ir import Module


def function_summary(fa: FunctionAnalysis) -> dict:
    from ptxopt.analysis.features import function_features

    cfg = fa.cfg
    dags = fa.dags
    nodes = [g.number_of_nodes() for g in dags]
    edges = [g.number_of_edges() for g in dags]
    cps = [c.length for c in fa.critical_paths]
    lat = [c.length for c in fa.latency_paths]
    return {
        "kind": fa.function.kind,
        # the names a contract's or a performance launch's scalars refer to (nvcc writes NAME_param_N)
        "parameters": [{"name": it.name, "type": (d.dtype or "").lstrip(".")}
                       for d in fa.function.params or () for it in d.items],
        "blocks": len(cfg.blocks),
        "instructions": len(cfg.instructions),
        "has_loop": cfg.has_loop,
        "loops": fa.loops.to_json(cfg),
        "dag": {
            "nodes_max": max(nodes, default=0),
            "nodes_total": sum(nodes),
            "edges_max": max(edges, default=0),
            "edges_total": sum(edges),
        },
        "critical_path": {
            "max": max(cps, default=0),
            "sum": sum(cps),
            "latency_max": max(lat, default=0),
        },
        "register_pressure": fa.pressure.as_dict(),
        "features": function_features(fa),
    }


def summary(module: Module) -> dict:
    """``{"entries": {name: {...}}}`` for every entry of ``module``."""
    from ptxopt.analysis.function import FunctionAnalysis

    return {"entries": {fn.name: function_summary(FunctionAnalysis(fn)) for fn in module.entries}}
