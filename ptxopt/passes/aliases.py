"""The aliases that name one variant of a parametric pass kind (``maxnreg_128``
is ``maxnreg{n=128}``): the names from before passes took parameters, kept;
and one variant of a parametric kind added later (``launch_bounds_2``), so
that every kind has a name :func:`ptxopt.passes.registry.pass_names` lists
(``ptxopt passes``, the golden directories, the pass matrix and the
differential tests run each listed name; a bare parametric kind cannot run).

Apart from :mod:`ptxopt.passes.registry` so that :class:`ptxopt.passes.base.Pass`
can print its alias without importing the registry (which imports it).
"""

from __future__ import annotations

# alias -> (kind, parameters): the pass names from before parameters, kept
_ALIASES: dict[str, tuple[str, dict]] = {
    "cache_ca": ("cache_ld", {"op": "ca"}),
    "cache_cg": ("cache_ld", {"op": "cg"}),
    "cache_cs": ("cache_ld", {"op": "cs"}),
    "cache_cv": ("cache_ld", {"op": "cv"}),
    "st_cache_wb": ("cache_st", {"op": "wb"}),
    "st_cache_wt": ("cache_st", {"op": "wt"}),
    "st_cache_cs": ("cache_st", {"op": "cs"}),
    "maxnreg_32": ("maxnreg", {"n": 32}),
    "maxnreg_64": ("maxnreg", {"n": 64}),
    "maxnreg_128": ("maxnreg", {"n": 128}),
    "maxnreg_255": ("maxnreg", {"n": 255}),
    "launch_bounds_2": ("launch_bounds", {"minblocks": 2}),
    "reorder_cp": ("reorder", {"policy": "cp"}),
    "reorder_il": ("reorder", {"policy": "il"}),
    "reorder_lf": ("reorder", {"policy": "lf"}),
    "reorder_sl": ("reorder", {"policy": "sl"}),
    "prefetch_L1": ("prefetch", {"level": "L1"}),
    "prefetch_L2": ("prefetch", {"level": "L2"}),
    "unroll_2": ("unroll", {"factor": 2}),
    "unroll_4": ("unroll", {"factor": 4}),
    "loop_version_2": ("loop_version", {"check": "align", "width": 2}),
    "loop_version_4": ("loop_version", {"check": "align", "width": 4}),
    "swp_ld_1": ("swp_ld", {"distance": 1}),
    "swp_ld_2": ("swp_ld", {"distance": 2}),
}

_ALIAS_OF = {(kind, tuple(sorted(params.items()))): alias for alias, (kind, params) in _ALIASES.items()}


def alias_of(kind: str, params: dict) -> str | None:
    """The alias naming ``kind`` with exactly ``params``, or None."""
    if not params:
        return None
    return _ALIAS_OF.get((kind, tuple(sorted(params.items()))))


__all__ = ["alias_of"]
