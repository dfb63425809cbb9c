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

Passes from outside ptxopt (a user's own): the entry points of the group
``ptxopt.passes`` (``name = "package.module:PassClass"``, the name being the
class's ``kind``), imported the first time one is asked for, and classes
given to :func:`register` at run time. They come after the built-in kinds,
work everywhere a built-in name does (pipeline strings, ``run``/``eval``/
``explain``/``search``, :func:`ptxopt.optimize`), may not shadow a built-in
name, and their code enters the front-end digest of every cache key
(:func:`code_digests`), so changing a plugin never serves a result its old
code produced.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
from functools import partial
from importlib import import_module
from typing import Callable

from ptxopt.support import digests
from ptxopt.support.pass_output import captured
from ptxopt.passes.aliases import _ALIASES, alias_of  # noqa: F401  (registry.alias_of)
from ptxopt.passes.base import Pass

#: the entry-point group of passes from outside ptxopt
ENTRY_POINT_GROUP = "ptxopt.passes"

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
    "loop_version": ("loop_version", "LoopVersion"),
    "swp_ld": ("pipeline_loads", "SwpLd"),
}


#: plugin passes loaded or registered: kind -> class
_PLUGINS: dict[str, type[Pass]] = {}
#: plugin entry points not imported yet: kind -> "module:Class" (None: not read yet)
_PENDING: dict[str, str] | None = None
#: plugin kind -> digest of its code (:func:`ptxopt.support.digests.code_of`)
_PLUGIN_CODE: dict[str, str] = {}
_KIND_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*$")


class PluginPassError(Exception):
    """A plugin pass that cannot be registered or imported."""


def _pending() -> dict[str, str]:
    global _PENDING
    if _PENDING is None:
        try:
            from importlib.metadata import entry_points
            found = {ep.name: ep.value for ep in entry_points(group=ENTRY_POINT_GROUP)}
        except Exception:  # broken metadata: no entry-point passes
            found = {}
        _PENDING = {k: v for k, v in found.items() if k not in _PLUGINS}
    return _PENDING


def register(cls: type[Pass], *, replace: bool = False) -> type[Pass]:
    """Make pass class *cls* (a frozen dataclass subclass of :class:`Pass`)
    available under its ``kind``; returns it, so it also works as a class
    decorator. A built-in kind or alias cannot be shadowed; a different
    class under a kind already registered needs ``replace=True``."""
    if not (isinstance(cls, type) and issubclass(cls, Pass) and dataclasses.is_dataclass(cls)):
        raise PluginPassError(f"{cls!r} is not a dataclass subclass of ptxopt.passes.Pass")
    kind = cls.kind
    if not isinstance(kind, str) or not _KIND_RE.match(kind):
        raise PluginPassError(f"{cls.__qualname__}.kind = {kind!r}: a pass needs a kind that is an identifier")
    if kind in _PASSES or kind in _ALIASES:
        raise PluginPassError(f"{cls.__qualname__}: '{kind}' is a built-in pass name")
    old = _PLUGINS.get(kind)
    if old is not None and old is not cls and not replace:
        raise PluginPassError(f"{cls.__qualname__}: pass '{kind}' is already registered "
                              f"({old.__module__}.{old.__qualname__}); pass replace=True")
    _pending().pop(kind, None)
    _PLUGINS[kind] = cls
    _PLUGIN_CODE[kind] = digests.code_of(cls)
    return cls


def unregister(kind: str) -> None:
    """Forget a plugin pass registered at run time (tests)."""
    _PLUGINS.pop(kind, None)
    _PLUGIN_CODE.pop(kind, None)


def _load_plugin(kind: str) -> type[Pass]:
    ref = _pending()[kind]
    module, _, attr = ref.partition(":")
    try:
        with captured(f"plugin pass '{kind}' ({ref})"):  # an import that prints: kept off stdout
            obj = import_module(module)
        for part in attr.split(".") if attr else ():
            obj = getattr(obj, part)
    except Exception as e:  # noqa: BLE001  (a broken plugin: one line naming it, not a traceback)
        raise PluginPassError(f"pass '{kind}' (entry point {ref} of {ENTRY_POINT_GROUP}) cannot be imported: "
                              f"{type(e).__name__}: {e}") from None
    if getattr(obj, "kind", None) != kind:
        raise PluginPassError(f"entry point '{kind}' of {ENTRY_POINT_GROUP} names {ref}, whose kind is "
                              f"{getattr(obj, 'kind', None)!r}: the entry point's name must be the pass's kind")
    return register(obj)


def _plugin_code() -> dict[str, str]:
    """``{plugin kind: code digest}`` of every plugin pass, importing the
    entry points not imported yet (those that fail are left out: they cannot
    run, so they decide no output)."""
    for kind in list(_pending()):
        try:
            _load_plugin(kind)
        except PluginPassError:
            pass
    return dict(_PLUGIN_CODE)


def code_digests() -> dict:
    """Digests of the code, for cache keys: ``front`` decides the printed PTX
    of a (kernel, pipeline) -- ptxopt's own passes and front end
    (:func:`ptxopt.support.digests.own_code_digests`) and every plugin pass
    installed or registered --, ``evaluator`` the result once the PTX is fixed."""
    out = digests.own_code_digests()
    extra = _plugin_code()
    if extra:
        h = hashlib.sha256(out["front"].encode())
        for kind, digest in sorted(extra.items()):
            h.update(f"\0{kind}={digest}".encode())
        out["front"] = h.hexdigest()[:16]
    return out


def _load(kind: str) -> type[Pass]:
    """The class of a registered kind, importing its family's module (or the plugin)."""
    if kind in _PLUGINS:
        return _PLUGINS[kind]
    if kind not in _PASSES:
        return _load_plugin(kind)
    mod, cls = _PASSES[kind]
    return getattr(import_module(f"ptxopt.passes.{mod}"), cls)


def pass_registry() -> dict[str, Callable[[], type[Pass]]]:
    """``{kind: factory}``; ``factory()`` returns the pass class."""
    return {kind: partial(_load, kind) for kind in pass_kinds()}


def plugin_kinds() -> list[str]:
    """The plugin passes' kinds: registered ones, then entry points not imported yet."""
    return list(_PLUGINS) + [k for k in _pending() if k not in _PLUGINS]


def pass_kinds() -> list[str]:
    return list(_PASSES) + plugin_kinds()


def pass_names() -> list[str]:
    """The names a pipeline accepts without braces, in registry order: each
    kind without parameters, and each parametric kind's aliases (what
    ``ptxopt passes``, the golden tests and the benchmarks go through)."""
    out = []
    for kind in pass_kinds():
        aliases = [a for a, (k, _) in _ALIASES.items() if k == kind]
        out += aliases or [kind]
    return out


def resolve(name: str) -> tuple[str, dict]:
    """``(kind, fixed parameters)`` for a kind or an alias; raises :class:`UnknownPass`."""
    if name in _PASSES or name in _PLUGINS or name in _pending():
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
        import difflib

        sigs = [signature(k) for k in _PASSES]
        close = difflib.get_close_matches(self.name, pass_names(), n=3, cutoff=0.6)
        hint = f" (did you mean {' or '.join(repr(c) for c in close)}?)" if close else ""
        return (f"unknown pass '{self.name}'{hint}; valid passes: {', '.join(pass_names())}; "
                f"with parameters: {', '.join(s for s, k in zip(sigs, _PASSES) if s != k)} "
                f"(your own passes: the entry-point group {ENTRY_POINT_GROUP} or ptxopt.passes.register)")
