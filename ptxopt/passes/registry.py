"""Every pass by name, in a stable order that is also the RL action order.

The registry maps a name to a lazy factory (importing a pass family only when
one of its passes is asked for). Its key order is the action order of the
learning layer: the 20 passes, then ``stop`` (which is an action, not a
pass). A test ties every key to its pass's ``name`` so the CLI, the docs and
the action list cannot drift apart.
"""

from __future__ import annotations

from importlib import import_module
from typing import Callable

from ptxopt.passes.base import Pass

STOP = "stop"

# name -> (module under ptxopt.passes, class name)
_PASSES: dict[str, tuple[str, str]] = {
    "vec_ld": ("vectorize", "VecLd"),
    "vec_st": ("vectorize", "VecSt"),
    "split_ld": ("vectorize", "SplitLd"),
    "cache_ca": ("cache_hints", "CacheCA"),
    "cache_cg": ("cache_hints", "CacheCG"),
    "cache_cs": ("cache_hints", "CacheCS"),
    "cache_cv": ("cache_hints", "CacheCV"),
    "st_cache_wb": ("cache_hints", "StCacheWB"),
    "st_cache_wt": ("cache_hints", "StCacheWT"),
    "st_cache_cs": ("cache_hints", "StCacheCS"),
    "maxnreg_32": ("register_budget", "MaxNReg32"),
    "maxnreg_64": ("register_budget", "MaxNReg64"),
    "maxnreg_128": ("register_budget", "MaxNReg128"),
    "maxnreg_255": ("register_budget", "MaxNReg255"),
    "reorder_cp": ("reorder", "ReorderCriticalPath"),
    "reorder_il": ("reorder", "ReorderInterleave"),
    "reorder_lf": ("reorder", "ReorderLoadsFirst"),
    "reorder_sl": ("reorder", "ReorderStoresLast"),
    "prefetch_L1": ("prefetch", "PrefetchL1"),
    "prefetch_L2": ("prefetch", "PrefetchL2"),
}


def _factory(module: str, cls: str) -> Callable[[], type[Pass]]:
    def load() -> type[Pass]:
        return getattr(import_module(f"ptxopt.passes.{module}"), cls)

    return load


def pass_registry() -> dict[str, Callable[[], type[Pass]]]:
    """``{name: factory}`` in action order; ``factory()`` returns the pass class."""
    return {name: _factory(mod, cls) for name, (mod, cls) in _PASSES.items()}


def pass_names() -> list[str]:
    return list(_PASSES)


def action_names() -> list[str]:
    """The RL action space: every pass in registry order, then ``stop``."""
    return [*_PASSES, STOP]


def get_pass_class(name: str) -> type[Pass]:
    try:
        mod, cls = _PASSES[name]
    except KeyError:
        raise UnknownPass(name) from None
    return getattr(import_module(f"ptxopt.passes.{mod}"), cls)


class UnknownPass(KeyError):
    def __init__(self, name: str):
        super().__init__(name)
        self.name = name

    def __str__(self) -> str:
        return f"unknown pass '{self.name}'; valid passes: {', '.join(_PASSES)}"
