"""Every pass by name. Each pass declares itself in its own module -- its
``kind``, ``family``, ``conflicts``, ``aliases`` and parameters are attributes
and fields of its class -- and registers there with the class decorator
:func:`declare`; this module only looks up what the modules declared.

A parametric kind (``maxnreg``, ``cache_ld``, ``reorder`` ...) is written
with its parameters, ``maxnreg{n=96}``; an alias (``maxnreg_128``) names one
variant and a pass with an alias prints as its alias (:meth:`Pass.__str__`),
so pipeline strings, cache keys, reports and the committed trajectories and
policy keep the names they always had. A new variant needs no alias: it
prints as ``kind{params}``.

ptxopt's own passes are the modules under ``ptxopt/passes/``. They are
imported lazily: looking up a name imports only the modules whose source
spells it as a string (``vec_ld`` imports only ``vectorize``; a plugin's
name none), listing the passes imports every module. The order of
``ptxopt passes`` and :func:`pass_names`: the modules of
:data:`LISTING_ORDER` in that order, then any other module alphabetically;
within a module, its classes in the order they are defined. It is *not* the
learning layer's action order (that is :data:`ptxopt.search.actions.ACTIONS`,
which lists its own strings, append-only).

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
import pkgutil
import re
import sys
from functools import partial
from importlib import import_module
from pathlib import Path
from typing import Callable

from ptxopt.support import digests
from ptxopt.support.pass_output import captured
from ptxopt.passes.base import Pass

#: the entry-point group of passes from outside ptxopt
ENTRY_POINT_GROUP = "ptxopt.passes"
_PACKAGE = __name__.rpartition(".")[0]  # ptxopt.passes

#: The modules whose passes ``ptxopt passes`` lists first, in this order (one
#: line per module; a module not named here is listed after them).
LISTING_ORDER: tuple[str, ...] = (
    "vectorize",
    "cache_hints",
    "register_budget",
    "reorder",
    "prefetch",
    "launch_bounds",
    "readonly_path",
    "unroll",
    "loop_version",
    "pipeline_loads",
)

#: ptxopt's own passes, as their modules declared them: kind -> class
_DECLARED: dict[str, type[Pass]] = {}
#: every alias, of a declared or a plugin pass: alias -> (kind, parameters)
_ALIASES: dict[str, tuple[str, dict]] = {}
#: the package path the last full import of the pass modules covered (None: not done)
_SCANNED_FOR: tuple[str, ...] | None = None

#: plugin passes loaded or registered: kind -> class
_PLUGINS: dict[str, type[Pass]] = {}
#: plugin entry points not imported yet: kind -> "module:Class" (None: not read yet)
_PENDING: dict[str, str] | None = None
#: plugin kind -> digest of its code (:func:`ptxopt.support.digests.code_of`)
_PLUGIN_CODE: dict[str, str] = {}
_KIND_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*$")


class PluginPassError(Exception):
    """A pass that cannot be declared, registered or imported."""


# -- declaring ---------------------------------------------------------------------------------------

def _checked(cls: type[Pass]) -> list[str]:
    """The names ``cls`` claims (its kind, then its aliases); raises :class:`PluginPassError`
    for a class that is not a pass or names that are not identifiers."""
    if not (isinstance(cls, type) and issubclass(cls, Pass) and dataclasses.is_dataclass(cls)):
        raise PluginPassError(f"{cls!r} is not a dataclass subclass of ptxopt.passes.Pass")
    kind = cls.kind
    if not isinstance(kind, str) or not _KIND_RE.match(kind):
        raise PluginPassError(f"{cls.__qualname__}.kind = {kind!r}: a pass needs a kind that is an identifier")
    params = set(cls.parameter_names())
    for alias, fixed in cls.aliases.items():
        if not isinstance(alias, str) or not _KIND_RE.match(alias):
            raise PluginPassError(f"{cls.__qualname__}: alias {alias!r} is not an identifier")
        if set(fixed) != params:
            raise PluginPassError(f"{cls.__qualname__}: alias '{alias}' sets {sorted(fixed)}, "
                                  f"the parameters are {sorted(params)}")
        try:
            cls(**fixed)
        except (TypeError, ValueError) as e:
            raise PluginPassError(f"{cls.__qualname__}: alias '{alias}': {e}") from None
    return [kind, *cls.aliases]


def _forget(kind: str) -> None:
    for alias in [a for a, (k, _) in _ALIASES.items() if k == kind]:
        del _ALIASES[alias]


def declare(cls: type[Pass]) -> type[Pass]:
    """Class decorator (above ``@dataclass``): ``cls`` is one of ptxopt's own
    passes, from a module under ``ptxopt/passes/``, known by its ``kind`` and
    its ``aliases``. A name two classes claim is an error (a user's pass is
    :func:`register`-ed instead)."""
    names = _checked(cls)
    if not cls.__module__.startswith(_PACKAGE + "."):
        raise PluginPassError(f"{cls.__qualname__} is not in {_PACKAGE}: a pass of your own is registered "
                              f"(ptxopt.passes.register or the entry-point group {ENTRY_POINT_GROUP})")
    file = getattr(sys.modules.get(cls.__module__), "__file__", None)
    text = _source(Path(file)) if file else None
    unwritten = [n for n in names if text is not None and not _spells(text, n)]
    if unwritten:  # the registry finds a module by the names it spells
        raise PluginPassError(f"{cls.__module__}.{cls.__qualname__}: '{unwritten[0]}' is not written as a "
                              "string in its module (write kinds and aliases as literals)")
    old = _DECLARED.get(cls.kind)
    again = old is not None and (old.__module__, old.__qualname__) == (cls.__module__, cls.__qualname__)
    if again:  # the same module imported again (importlib.reload): the new class replaces the old
        _forget(cls.kind)
    for name in names:
        if (name in _DECLARED and not again) or name in _ALIASES or name in _PLUGINS:
            raise PluginPassError(f"{cls.__module__}.{cls.__qualname__}: '{name}' is already a pass name")
    _DECLARED[cls.kind] = cls
    _ALIASES.update((alias, (cls.kind, dict(fixed))) for alias, fixed in cls.aliases.items())
    return cls


# -- finding the declarations --------------------------------------------------------------------------

def _modules() -> dict[str, Path]:
    """The modules under ``ptxopt/passes/`` -> their file, in listing order."""
    found = {m.name: Path(getattr(m.module_finder, "path", "")) / f"{m.name}.py"
             for m in pkgutil.iter_modules(sys.modules[_PACKAGE].__path__) if not m.ispkg}
    listed = [m for m in LISTING_ORDER if m in found]
    return {m: found[m] for m in [*listed, *sorted(set(found) - set(listed))]}


def _known(name: str) -> bool:
    return name in _DECLARED or name in _ALIASES or name in _PLUGINS


def _import_all() -> None:
    """Import every pass module (once per package path: a test may add a folder to it)."""
    global _SCANNED_FOR
    path = tuple(sys.modules[_PACKAGE].__path__)
    if _SCANNED_FOR == path:
        return
    for mod in _modules():
        import_module(f"{_PACKAGE}.{mod}")
    _SCANNED_FOR = path


def _source(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, ValueError):  # no source to read (a zipped or compiled-only install)
        return None


def _spells(text: str, name: str) -> bool:
    return f'"{name}"' in text or f"'{name}'" in text


def _find(name: str) -> None:
    """Import the pass modules whose source spells ``"name"`` until one has
    declared it. :func:`declare` refuses a name its module does not spell, so
    a name no module spells is no built-in one; where a source cannot be
    read, every module is imported instead."""
    if _known(name) or _SCANNED_FOR == tuple(sys.modules[_PACKAGE].__path__):
        return
    unread = False
    for mod, path in _modules().items():
        text = _source(path)
        unread |= text is None
        if text is not None and _spells(text, name):
            import_module(f"{_PACKAGE}.{mod}")
            if _known(name):
                return
    if unread:
        _import_all()


def _builtin_kinds() -> list[str]:
    _import_all()
    rank = {m: i for i, m in enumerate(_modules())}
    return sorted(_DECLARED, key=lambda k: rank.get(_DECLARED[k].__module__.rpartition(".")[2], len(rank)))


# -- plugins -------------------------------------------------------------------------------------------

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


def _builtin_name(name: str) -> bool:
    return name in _DECLARED or (name in _ALIASES and _ALIASES[name][0] in _DECLARED)


def register(cls: type[Pass], *, replace: bool = False) -> type[Pass]:
    """Make pass class *cls* (a frozen dataclass subclass of :class:`Pass`)
    available under its ``kind`` (and its ``aliases``); returns it, so it also
    works as a class decorator. A built-in kind or alias cannot be shadowed; a
    different class under a kind already registered needs ``replace=True``."""
    names = _checked(cls)
    kind = cls.kind
    for name in names:
        _find(name)
        if _builtin_name(name):
            raise PluginPassError(f"{cls.__qualname__}: '{name}' is a built-in pass name")
    old = _PLUGINS.get(kind)
    if old is not None and old is not cls and not replace:
        raise PluginPassError(f"{cls.__qualname__}: pass '{kind}' is already registered "
                              f"({old.__module__}.{old.__qualname__}); pass replace=True")
    for alias in names[1:]:
        if alias in _PLUGINS or (alias in _ALIASES and _ALIASES[alias][0] != kind):
            raise PluginPassError(f"{cls.__qualname__}: '{alias}' is already a pass name")
    _pending().pop(kind, None)
    _forget(kind)
    _PLUGINS[kind] = cls
    _ALIASES.update((alias, (kind, dict(fixed))) for alias, fixed in cls.aliases.items())
    _PLUGIN_CODE[kind] = digests.code_of(cls)
    return cls


def unregister(kind: str) -> None:
    """Forget a pass registered (or declared) at run time, and its aliases (tests)."""
    if _PLUGINS.pop(kind, None) is not None or _DECLARED.pop(kind, None) is not None:
        _forget(kind)
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


# -- looking up ----------------------------------------------------------------------------------------

def _load(kind: str) -> type[Pass]:
    """The class of a registered kind, importing its module (or the plugin)."""
    if kind in _PLUGINS:
        return _PLUGINS[kind]
    _find(kind)
    if kind in _DECLARED:
        return _DECLARED[kind]
    return _load_plugin(kind)


def pass_registry() -> dict[str, Callable[[], type[Pass]]]:
    """``{kind: factory}``; ``factory()`` returns the pass class."""
    return {kind: partial(_load, kind) for kind in pass_kinds()}


def plugin_kinds() -> list[str]:
    """The plugin passes' kinds: registered ones, then entry points not imported yet."""
    return list(_PLUGINS) + [k for k in _pending() if k not in _PLUGINS]


def pass_kinds() -> list[str]:
    return _builtin_kinds() + plugin_kinds()


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
    _find(name)
    if name in _DECLARED or name in _PLUGINS or name in _pending():
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

        kinds = _builtin_kinds()
        sigs = [signature(k) for k in kinds]
        close = difflib.get_close_matches(self.name, pass_names(), n=3, cutoff=0.6)
        hint = f" (did you mean {' or '.join(repr(c) for c in close)}?)" if close else ""
        return (f"unknown pass '{self.name}'{hint}; valid passes: {', '.join(pass_names())}; "
                f"with parameters: {', '.join(s for s, k in zip(sigs, kinds) if s != k)} "
                f"(your own passes: the entry-point group {ENTRY_POINT_GROUP} or ptxopt.passes.register)")
