"""The backend registry: which backend a name (``--backend sim``) means.

:func:`register_backend` (name -> factory), :func:`get_backend` (one
instance per name and process), :func:`backend_names`, and the flags of a
named backend without making one (:func:`is_estimate`): a factory that is a
class with the flags as class attributes, or names one as its
``backend_class`` (both built-in ones do), answers without being called, so
asking whether ``gpu`` cycles are measurements never starts the GPU probe.

Built in: ``sim`` (:class:`~ptxopt.measure.sim.SimBackend`) and ``gpu``
(:class:`~ptxopt.measure.gpu.GpuBackend`, whose factory raises
:class:`~ptxopt.measure.backend.BackendUnavailable` -- ``GPU backend
unavailable: <why>`` -- without the :mod:`ptxopt.gpu` package, CuPy or a GPU).
"""

from __future__ import annotations

import os
from typing import Callable

from ptxopt.measure.backend import Backend
from ptxopt.measure.gpu import registry_factory
from ptxopt.measure.sim import SimBackend

_FACTORIES: dict[str, Callable[..., Backend]] = {"sim": SimBackend, "gpu": registry_factory}
_INSTANCES: dict[tuple[str, int], Backend] = {}  # (name, pid): a forked worker makes its own


def register_backend(name: str, factory: Callable[..., Backend], *, replace: bool = False) -> None:
    """Make ``factory()`` the backend called ``name``."""
    if name in _FACTORIES and not replace:
        raise ValueError(f"backend {name!r} is already registered")
    _FACTORIES[name] = factory
    for k in [k for k in _INSTANCES if k[0] == name]:
        del _INSTANCES[k]


def backend_names() -> list[str]:
    return sorted(_FACTORIES)


def get_backend(name: str) -> Backend:
    """The backend called ``name`` (one instance per name and process).

    Raises :class:`~ptxopt.measure.backend.BackendUnavailable` (the ``gpu``
    backend without a GPU, CuPy or :mod:`ptxopt.gpu`) or :class:`ValueError`
    (unknown name).
    """
    b = _INSTANCES.get((name, os.getpid()))
    if b is not None:
        return b
    factory = _FACTORIES.get(name)
    if factory is None:
        raise ValueError(f"unknown backend {name!r} (choose from {', '.join(backend_names())})")
    b = factory()
    _INSTANCES[(name, os.getpid())] = b
    return b


def is_estimate(name: str) -> bool:
    """Are the cycles of the backend called ``name`` a model's estimate (not a
    measurement)?  False for a name that is not registered or a backend that
    cannot be made."""
    factory = _FACTORIES.get(name)
    flag = getattr(getattr(factory, "backend_class", factory), "is_estimate", None)
    if isinstance(flag, bool):
        return flag
    try:
        return bool(get_backend(name).is_estimate)
    except Exception:
        return False


def backend_version(b: Backend) -> str:
    return str(getattr(b, "version", "") or "")


__all__ = ["register_backend", "get_backend", "backend_names", "is_estimate", "backend_version"]
