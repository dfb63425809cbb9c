"""The seam between ptxopt and the layers above it (the learning layer, :mod:`rl`).

ptxopt never imports :mod:`rl` (``tests/project/test_import_contract.py``). A layer
above registers what it adds -- a search strategy, a CLI command, a named
object such as a checkpoint loader -- as lazy ``"module:attr"`` references,
so registering imports nothing heavy (torch is imported only when a
reference is resolved, where the code needs it).

Plugins are the ``ptxopt.plugins`` entry points (``setup.cfg``: ``rl =
rl.plugin:register``); each is a function taking the :class:`Registry`.
When the installed metadata does not declare ``rl`` (an editable install
made before the entry point existed) but :mod:`rl.plugin` is importable,
it is loaded all the same.
"""

from __future__ import annotations

import importlib
from typing import Any, Callable

GROUP = "ptxopt.plugins"
#: plugins loaded even when the installed metadata does not declare them: name -> "module:attr"
FALLBACK = {"rl": "ptxopt_rl.plugin:register"}


class Registry:
    """What the plugins registered: ``kind -> name -> "module:attr"``."""

    def __init__(self) -> None:
        self.entries: dict[str, dict[str, str]] = {"strategy": {}, "command": {}, "object": {}}
        #: plugin name -> why it could not be loaded (reported when something it would provide is asked for)
        self.errors: dict[str, str] = {}

    def strategy(self, name: str, ref: str) -> None:
        """A search strategy: ``fn(root, meter, *, checkpoint, samples, temperature, max_steps, width, seed)``."""
        self.entries["strategy"][name] = ref

    def command(self, name: str, ref: str) -> None:
        """A click command added to ``ptxopt`` under ``name``."""
        self.entries["command"][name] = ref

    def object(self, name: str, ref: str) -> None:
        """Any other object (``load_policy``, ``CheckpointError``...)."""
        self.entries["object"][name] = ref


_registry: Registry | None = None


def _resolve(ref: str) -> Any:
    module, _, attr = ref.partition(":")
    obj = importlib.import_module(module)
    for part in attr.split(".") if attr else ():
        obj = getattr(obj, part)
    return obj


def _entry_points() -> list[tuple[str, str]]:
    try:
        from importlib.metadata import entry_points
        return [(ep.name, ep.value) for ep in entry_points(group=GROUP)]
    except Exception:  # broken metadata: fall back below
        return []


def registry() -> Registry:
    """The registry, loading the plugins the first time."""
    global _registry
    if _registry is None:
        reg = Registry()
        found = dict(_entry_points())
        for name, ref in FALLBACK.items():
            found.setdefault(name, ref)
        for name, ref in found.items():
            try:
                _resolve(ref)(reg)
            except ImportError as e:  # the layer is not installed: what it would add is missing
                reg.errors[name] = str(e)
        _registry = reg
    return _registry


def _missing(kind: str, name: str) -> ImportError:
    why = "; ".join(f"{p}: {e}" for p, e in registry().errors.items())
    return ImportError(f"no installed plugin provides the {kind} {name!r}" + (f" ({why})" if why else ""))


def get(kind: str, name: str) -> Any:
    """The registered ``kind`` called ``name``, imported now; ImportError when no plugin
    registered it or importing it fails (the learning layer without torch)."""
    ref = registry().entries[kind].get(name)
    if ref is None:
        raise _missing(kind, name)
    return _resolve(ref)


def strategy(name: str) -> Callable:
    return get("strategy", name)


def command(name: str):
    return get("command", name)


def obj(name: str) -> Any:
    return get("object", name)


def commands() -> list[str]:
    return sorted(registry().entries["command"])


__all__ = ["GROUP", "Registry", "registry", "get", "strategy", "command", "obj", "commands"]
