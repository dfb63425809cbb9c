"""Where parallel work runs: one interface, a local process pool (default) and Ray.

::

    from ptxopt.executor import make_executor

    with make_executor("ray:auto", workers=8) as ex:       # or "local", or None
        outcomes = ex.run(fn, args, fatal=(CacheError,))   # Outcome(index, value | error | died)

:mod:`.interface` holds the interface and the failure rules every executor
shares; :mod:`.local` the default (no Ray needed); :mod:`.raycluster` the
Ray executor (``ray`` imported there only, when used); :mod:`.journal` how
workers hand their cache rows to the driver, which alone writes the SQLite
files; :mod:`.gpu_actors` GPU measurement as Ray actors.
"""

from __future__ import annotations

from ptxopt.executor.interface import DIED, CodeMismatch, Executor, Outcome
from .local import LocalExecutor

#: what ``--executor`` accepts, for help texts and messages
SPECS = "local, ray, ray:ADDRESS"


def make_executor(spec=None, workers: int = 0) -> Executor:
    """An executor from ``spec``: an :class:`Executor` (returned as is), None or
    ``"local"`` (:class:`LocalExecutor` with ``workers`` processes; 0: in
    this process), ``"ray"`` (the cluster this process joined, ``$RAY_ADDRESS``,
    or a private one) or ``"ray:ADDRESS"`` (``auto``, ``HOST:PORT``,
    ``ray://HOST:PORT``). ValueError for anything else."""
    if isinstance(spec, Executor):
        return spec
    if spec is None or spec == "local":
        return LocalExecutor(workers)
    if not isinstance(spec, str):
        raise ValueError(f"executor must be one of {SPECS}, not {spec!r}")
    kind, _, address = spec.partition(":")
    if kind == "ray":
        if _ and not address:
            raise ValueError("executor 'ray:' needs an address after the colon (ray:auto, ray:HOST:6379)")
        from .raycluster import RayExecutor

        return RayExecutor(address or None, workers)
    raise ValueError(f"unknown executor {spec!r}: use one of {SPECS}")


__all__ = ["Executor", "Outcome", "CodeMismatch", "LocalExecutor", "make_executor", "DIED", "SPECS"]
