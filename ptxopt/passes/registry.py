"""Every pass by name: the registered kinds, and the aliases that name one
variant of a parametric kind.

A kind maps to a lazy factory (importing a pass family only when one of its
passes is asked for). A parametric kind (``maxnreg``, ``cache_ld``,
``cache_st``, ``reorder``, ``prefetch``) is written with its parameters,
``maxnreg{n=96}``; the names that existed before passes took parameters
(``maxnreg_128``, ``cache_cg`` ...) are aliases of one variant each, and a
pass with an alias prints as its alias (:meth:`Pass.__str__`), so pipeline
strings, cache keys, reports and the committed trajectories and policy keep
the names they always had. A new variant needs no alias: it prints as
``kind{params}``.

The order here is the order of ``ptxopt passes`` and of :func:`pass_names`;
it is *not* the learning layer's action order (that is
:data:`ptxopt.search.actions.ACTIONS`, which lists its own strings).
"""

from __future__ import annotations

from functools import partial
from importlib import import_module
from typing import Callable

from ptxopt.passes.aliases import _ALIASES, alias_of  # noqa: F401  (registry.alias_of)
from ptxopt.passes.base import Pass

# kind -> (module under ptxopt.passes, class name)
_PASSES: dict[str, tuple[str, str]] = {
    "vec_ld": ("vectorize", "VecLd"),
    "vec_st": ("vectorize", "VecSt"),
    "split_ld": ("vectorize", "SplitLd"),
    "cache_ld": ("cache_hints", "CacheLd"),
    "cache_st": ("cache_hints", "CacheSt"),
    "maxnreg": ("register_budget", "MaxNReg"),
    "reorder": ("reorder", "Reorder"),
    "prefetch": ("prefetch", "Prefetch"),
    "launch_bounds": ("launch_bounds", "LaunchBounds"),  # the names before it keep their places
    "nc_ld": ("readonly_path", "NcLd"),
    "unroll": ("unroll", "Unroll"),
}


def _load(kind: str) -> type[Pass]:
    """The class of a registered kind, importing its family's module."""
    mod, cls = _PASSES[kind]
    return getattr(import_module(f"ptxopt.passes.{mod}"), cls)


def pass_registry() -> dict[str, Callable[[], type[Pass]]]:
    """``{kind: factory}``; ``factory()`` returns the pass class."""
    return {kind: partial(_load, kind) for kind in _PASSES}


def pass_kinds() -> list[str]:
    return list(_PASSES)


def pass_names() -> list[str]:
    """The names a pipeline accepts without braces, in registry order: each
    kind without parameters, and each parametric kind's aliases (what
    ``ptxopt passes``, the golden tests and the benchmarks go through)."""
    out = []
    for kind in _PASSES:
        aliases = [a for a, (k, _) in _ALIASES.items() if k == kind]
        out += aliases or [kind]
    return out


def resolve(name: str) -> tuple[str, dict]:
    """``(kind, fixed parameters)`` for a kind or an alias; raises :class:`UnknownPass`."""
    if name in _PASSES:
        return name, {}
    if name in _ALIASES:
        kind, params = _ALIASES[name]
        return kind, dict(params)
    raise UnknownPass(name)


def get_pass_class(name: str) -> type[Pass]:
    """The class of a kind or of an alias's kind."""
    return _load(resolve(name)[0])


def signature(kind: str) -> str:
    """``maxnreg{n=24..255}``: a kind with its parameters' legal values."""
    from ptxopt.passes.base import show_choices

    cls = get_pass_class(kind)
    params = cls.parameter_names()
    if not params:
        return kind
    return kind + "{" + ",".join(f"{p}={show_choices(cls.choices[p]) if p in cls.choices else '...'}"
                                 for p in params) + "}"


class UnknownPass(KeyError):
    def __init__(self, name: str):
        super().__init__(name)
        self.name = name

    def __str__(self) -> str:
        sigs = [signature(k) for k in _PASSES]
        return (f"unknown pass '{self.name}'; valid passes: {', '.join(pass_names())}; "
                f"with parameters: {', '.join(s for s, k in zip(sigs, _PASSES) if s != k)}")
