"""Ray as the executor: tasks on a Ray cluster (``--executor ray[:ADDRESS]``).

``ray`` is imported here, lazily, and nowhere else in ptxopt: the local
executor and the rest of the toolkit never need it (``pip install
'ptxopt[ray]'``).

* **Connecting.** ``address`` is what :func:`ray.init` takes: ``None`` (a
  cluster this process already joined, else ``$RAY_ADDRESS``, else a
  private Ray instance on this machine, ``workers`` CPUs), ``auto``,
  ``HOST:6379`` or ``ray://HOST:10001``. A cluster this process did not
  start is left running on :meth:`RayExecutor.close`.  A ``HOST:PORT``
  address (also ``ray://`` and ``$RAY_ADDRESS``) is probed first with a TCP
  connection of :data:`CONNECT_TIMEOUT` seconds (:func:`unreachable`):
  ``ray.init`` itself retries an address where nothing listens for minutes,
  silently, with the driver's SIGTERM handler replaced by its own.
* **Code and corpus.** They travel through Ray's runtime environment
  (:func:`runtime_env`): from a checkout, its root as ``working_dir`` (the
  ``ptxopt`` and ``rl`` packages and ``corpus/``; virtual environments,
  ``.git``, caches and tests left out); from an installed wheel, the
  package directory as a ``py_modules`` entry (it carries ``_corpus``).
  Ray uploads local directories only for a whole job: a caller that
  joins the cluster itself (``ray.init`` before ptxopt does) passes
  ``runtime_env=runtime_env()`` there. Third-party dependencies (ptxas wheels, numpy, ...) must already be
  installed on every node, in the same Python version.
* **Tasks.** One Ray task per :meth:`run` argument, ``max_retries=0``: the
  retry rule is ptxopt's own (:mod:`ptxopt.executor.interface`: a worker that
  dies -- ``WorkerCrashedError``, ``NodeDiedError``, Ray's ``OutOfMemoryError``
  -- gets its task retried once, alone). At most ``workers`` tasks are in
  flight (default: the cluster's CPUs).
* **Interrupts.** Ctrl-C/SIGTERM in the driver cancels every task in flight
  (``ray.cancel(force=True)`` kills its worker process), then re-raises.
  ``ray.init`` replaces the driver's SIGTERM handler with one that aborts;
  the driver's handlers are put back right after it.

:attr:`RayExecutor.stats` counts tasks and the pickled bytes each way (what
crosses the network per task), for the README's scaling table.
"""

from __future__ import annotations

import pickle
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Sequence

from ptxopt.executor.interface import Executor, Outcome, task_error

#: left out of the working directory shipped to the cluster
EXCLUDES = [".venv", "venv", ".git", "__pycache__", "*.pyc", "*.sqlite", "*.sqlite-*", "*.sqlite.*",
            "tests", "benchmarks/out", ".pytest_cache", "build", "dist", "*.egg-info", "docs"]


#: seconds the TCP probe of a cluster's address may take (:func:`unreachable`)
CONNECT_TIMEOUT = 5.0


class RayNotInstalled(RuntimeError):
    """``--executor ray`` without the ``ray`` package."""


class RayUnreachable(ConnectionError):
    """Nothing answers at the Ray cluster's address."""


def _host_port(address: str | None) -> tuple[str, int] | None:
    """``(host, port)`` of a ``HOST:PORT`` or ``ray://HOST:PORT`` address; None for
    ``auto``, no address, or one without a port (Ray resolves those itself)."""
    if not address or address == "auto" or address == "local":
        return None
    rest = address.split("://", 1)[1] if "://" in address else address
    host, sep, port = rest.rpartition(":")
    if not sep or not port.isdigit():
        return None
    return host.strip("[]") or "127.0.0.1", int(port)


def unreachable(address: str | None, timeout: float = CONNECT_TIMEOUT) -> str | None:
    """Why the cluster at ``address`` (``None``: ``$RAY_ADDRESS``) cannot be
    reached (a TCP connection within ``timeout`` seconds), else None."""
    import os
    import socket

    if address is None:
        address = os.environ.get("RAY_ADDRESS") or None
    hp = _host_port(address)
    if hp is None:
        return None
    try:
        socket.create_connection(hp, timeout=timeout).close()
    except socket.timeout:
        return f"cannot reach the Ray cluster at {address}: no answer within {timeout:g} s"
    except OSError as e:
        return f"cannot reach the Ray cluster at {address}: {e.strerror or e}"
    return None


def _ray():
    try:
        import ray
    except ImportError:
        raise RayNotInstalled("the ray executor needs Ray: pip install 'ptxopt[ray]'") from None
    return ray


def runtime_env() -> dict:
    """How ptxopt's code and corpus reach the cluster's workers (see the module doc)."""
    import os

    pkg = Path(__file__).resolve().parent.parent  # the ptxopt package
    root = pkg.parent
    if (root / "setup.cfg").is_file() and (root / "corpus" / "manifest.json").is_file():  # a checkout
        env = {"working_dir": str(root), "excludes": list(EXCLUDES)}
    else:
        env = {"py_modules": [str(pkg)]}  # an installed package: it carries its corpus (ptxopt/_corpus)
    # the driver's choice of ptxas (tuning a Triton cache: Triton's binary and flags) holds on the workers
    # too; a binary a worker's machine does not have is its ToolNotFound, not another ptxas silently
    tools = {k: os.environ[k] for k in ("PTXOPT_PTXAS", "PTXOPT_PTXAS_FLAGS") if os.environ.get(k)}
    if tools:
        env["env_vars"] = tools
    return env


@contextmanager
def _keeping_signal_handlers():
    """``ray.init`` installs its own SIGTERM handler in the driver (it aborts the process: exit 134);
    the driver's own handlers come back afterwards, so SIGTERM still takes the Ctrl-C path
    (:mod:`ptxopt.cli.termination`: what finished is written, exit 143)."""
    import signal
    import threading

    main = threading.current_thread() is threading.main_thread()
    saved = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)} if main else {}
    try:
        yield
    finally:
        for sig, handler in saved.items():
            if handler is not None:
                signal.signal(sig, handler)


def _call(fn, arg):
    return fn(arg)


#: Ray's ways of saying "the process (or machine) running the task is gone" -- not the task's own failure
_DEATHS = ("WorkerCrashedError", "NodeDiedError", "OutOfMemoryError", "LocalRayletDiedError", "ActorDiedError",
           "ObjectLostError", "OwnerDiedError")


class RayExecutor(Executor):
    kind = "ray"
    same_host = False
    out_of_process = True  # every task runs in a Ray worker, however many

    def __init__(self, address: str | None = None, workers: int = 0, *, runtime_env: dict | None = None,
                 num_cpus: float = 1.0, init_kwargs: dict | None = None):
        self.address = address or None
        self.requested = max(0, int(workers))
        self.env = runtime_env
        self.num_cpus = num_cpus
        self.init_kwargs = dict(init_kwargs or {})
        self._owned = False
        self._remote = None
        self.stats = {"tasks": 0, "sent_bytes": 0, "received_bytes": 0, "connect_s": 0.0}
        self.workers = self.requested  # resolved on connect when 0

    # -- the cluster ------------------------------------------------------------
    def connect(self):
        ray = _ray()
        t0 = time.perf_counter()
        env = self.env if self.env is not None else runtime_env()
        if not ray.is_initialized():
            why = unreachable(self.address)
            if why is not None:
                raise RayUnreachable(why)
            kw = dict(address=self.address, runtime_env=env, include_dashboard=False, log_to_driver=False,
                      logging_level="ERROR")  # Ray's own notices would fill the report's stderr
            if self.address is None and self.requested:
                kw["num_cpus"] = self.requested
            kw.update(self.init_kwargs)
            with _keeping_signal_handlers():
                try:
                    ray.init(**kw)
                except ConnectionError as e:  # something answered, but not a Ray cluster (or it gave up)
                    raise RayUnreachable(f"cannot connect to the Ray cluster at {self.address or 'RAY_ADDRESS'}: "
                                         f"{e}") from None
            self._owned = True
        # joined by the caller (ray.init before us): the job's runtime env is the caller's, and Ray uploads
        # local directories only at the job level -- the caller passes runtime_env=runtime_env() to ray.init
        if self._remote is None:
            self._remote = ray.remote(max_retries=0, num_cpus=self.num_cpus)(_call)
        if not self.workers:
            self.workers = max(1, int(ray.cluster_resources().get("CPU", 1) // max(self.num_cpus, 1e-9)))
        self.stats["connect_s"] += time.perf_counter() - t0
        return ray

    def close(self) -> None:
        if self._owned:
            ray = _ray()
            if ray.is_initialized():
                ray.shutdown()
            self._owned = False
        self._remote = None

    def describe(self) -> str:
        return f"ray ({self.address or 'local'}, {self.workers or 'all'} CPUs)"

    # -- one round ----------------------------------------------------------------
    def _round(self, fn: Callable, args: Sequence, indices: list[int], fatal: tuple,
               record: Callable[[Outcome], None], *, fresh_worker: bool = False) -> list[tuple[int, bool]]:
        ray = self.connect()
        todo = list(indices)
        inflight: dict = {}
        died: list[tuple[int, bool]] = []
        finished = False
        try:
            while todo or inflight:
                while todo and len(inflight) < self.workers:
                    i = todo.pop(0)
                    self.stats["tasks"] += 1
                    self.stats["sent_bytes"] += len(pickle.dumps((fn, args[i]), protocol=5))
                    inflight[self._remote.remote(fn, args[i])] = i
                ready, _ = ray.wait(list(inflight), num_returns=1)
                for ref in ready:
                    i = inflight.pop(ref)
                    try:
                        value = ray.get(ref)
                    except fatal:  # Ray re-raises a task's exception as an instance of its class too
                        raise
                    except ray.exceptions.RayTaskError as e:  # the task raised: a result
                        cause = getattr(e, "cause", None)
                        if fatal and isinstance(cause, fatal):
                            raise cause from None
                        record(Outcome(i, error=task_error(cause if cause is not None else e)))
                        continue
                    except ray.exceptions.RayError as e:
                        if type(e).__name__ in _DEATHS:
                            died.append((i, True))
                            continue
                        raise
                    self.stats["received_bytes"] += len(pickle.dumps(value, protocol=5))
                    record(Outcome(i, value=value))
            finished = True
        finally:
            if not finished:  # interrupted or failed: kill what still runs
                for ref in inflight:
                    try:
                        ray.cancel(ref, force=True)
                    except Exception:
                        pass
        return died


__all__ = ["RayExecutor", "RayNotInstalled", "RayUnreachable", "unreachable", "runtime_env", "EXCLUDES",
           "CONNECT_TIMEOUT"]
