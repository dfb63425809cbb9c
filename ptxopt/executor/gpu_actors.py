"""GPU measurement as Ray actors: one actor per GPU, holding its CUDA context.

Why actors and not tasks: a measurement backend (``gpu``: CuPy, a CUDA
context, the harness compiled once) is expensive to start and must measure
alone on its device. A Ray actor with ``num_gpus=1`` is a process pinned to
one GPU of the cluster that keeps its backend between calls, and runs one
call at a time -- exactly the backend's "one measurement at a time" rule,
per GPU, with every GPU of the cluster measuring in parallel.

:class:`MeasureWorker` is the actor's body (a plain class, usable without
Ray). :class:`ActorFleet` is a :class:`~ptxopt.measure.backend.Backend` whose
``measure_many`` spreads a chunk of jobs over the actors and gathers the
results in order; :func:`use_fleet` registers it *under the wrapped
backend's own name*, so cache keys (which hold the backend's name and
version) are the ones a local run of that backend writes.

Rules, as for every executor (:mod:`ptxopt.executor.interface`):

* a job's own failure (the backend raised) is that job's result, never the
  chunk's;
* an actor that dies (its GPU fell off the bus, the process was killed) is
  restarted by Ray once (``max_restarts=1``); each job it held is measured
  once more, alone, and fails (``MeasureError('internal', ...)``) only if
  that dies too;
* every actor must report the same backend ``version`` (device, driver,
  harness): a fleet of mixed GPUs would put different devices' cycles under
  one cache key, so it is refused (:class:`BackendUnavailable`).

What was checked here: the actor logic on CPU, with ``num_gpus=0`` and the
``sim`` backend or a stub standing in for ``gpu`` through the same backend
interface (tests/executor/test_ray_executor.py). No GPU measurement has been taken
through this path; treat it as untested on hardware.
"""

from __future__ import annotations

import os
from dataclasses import replace
from typing import Sequence

from ptxopt.measure.backend import BackendUnavailable, MeasureError, MeasureJob, Measurement, measure_many


def _slim(job: MeasureJob) -> MeasureJob:
    """What crosses the network: the PTX, arch, launch and compile result; not the parsed module
    (large; a backend that needs it re-parses the PTX)."""
    return replace(job, module=None)


class MeasureWorker:
    """The actor's body: one backend instance for the actor's life (its CUDA context)."""

    def __init__(self, backend: str):
        from ptxopt.measure.backend_registry import get_backend

        self.name = backend
        self.backend = get_backend(backend)  # gpu: the context and harness are created here, once
        self.measured = 0

    def info(self) -> dict:
        return {"pid": os.getpid(), "backend": self.name, "version": getattr(self.backend, "version", None),
                "is_estimate": bool(self.backend.is_estimate), "measured": self.measured}

    def measure(self, jobs: Sequence[MeasureJob]) -> list:
        out = measure_many(self.backend, list(jobs))
        self.measured += len(jobs)
        # exceptions travel as themselves when they pickle, else as an internal MeasureError
        return [o if not isinstance(o, BaseException) or _picklable(o)
                else MeasureError("internal", f"{type(o).__name__}: {o}") for o in out]


def _picklable(e: BaseException) -> bool:
    import pickle

    try:
        pickle.loads(pickle.dumps(e))
        return True
    except Exception:
        return False


class ActorFleet:
    """A backend measuring on ``actors`` Ray actors (default: one per GPU of the cluster)."""

    pipelined = False  # each actor measures alone; the evaluator hands the fleet whole chunks

    def __init__(self, backend: str = "gpu", *, actors: int | None = None, num_gpus: float = 1.0,
                 executor=None):
        from .raycluster import RayExecutor

        self.executor = executor or RayExecutor()
        ray = self.executor.connect()
        self.ray = ray
        n = actors if actors is not None else int(ray.cluster_resources().get("GPU", 0) // max(num_gpus, 1e-9))
        if n < 1:
            raise BackendUnavailable(f"no GPU in the Ray cluster for the {backend} backend's actors")
        cls = ray.remote(num_gpus=num_gpus, max_restarts=1, max_task_retries=0)(MeasureWorker)
        self.actors = [cls.remote(backend) for _ in range(n)]
        try:
            infos = ray.get([a.info.remote() for a in self.actors])
        except ray.exceptions.RayError as e:  # the backend cannot start on the actors (no CuPy, no GPU)
            cause = getattr(e, "cause", e)
            raise BackendUnavailable(f"{backend} backend unavailable on the Ray actors: {cause}") from None
        versions = {i["version"] for i in infos}
        if len(versions) != 1:
            raise BackendUnavailable(f"the actors' {backend} backends differ ({sorted(map(str, versions))}): "
                                     "one cache key would mix devices; give each device kind its own run")
        self.name = backend
        self.version = versions.pop()
        self.is_estimate = infos[0]["is_estimate"]

    def info(self) -> list[dict]:
        return self.ray.get([a.info.remote() for a in self.actors])

    def measure(self, ptx_text: str, arch: str, spec=None) -> Measurement:
        out = self.measure_many([MeasureJob(ptx_text, arch, spec)])[0]
        if isinstance(out, BaseException):
            raise out
        return out

    def measure_many(self, jobs: Sequence[MeasureJob]) -> list:
        ray = self.ray
        jobs = [_slim(j) for j in jobs]
        out: list = [None] * len(jobs)
        n = len(self.actors)
        shares = {k: list(range(k, len(jobs), n)) for k in range(n)}  # round robin: similar sizes per GPU
        refs = {self.actors[k].measure.remote([jobs[i] for i in idx]): idx for k, idx in shares.items() if idx}
        lost: list[int] = []
        for ref, idx in refs.items():
            try:
                for i, o in zip(idx, ray.get(ref)):
                    out[i] = o
            except ray.exceptions.RayActorError:
                lost += idx
        for i in lost:  # each alone, once more, on a restarted or another actor
            actor = self.actors[i % n]
            try:
                out[i] = ray.get(actor.measure.remote([jobs[i]]))[0]
            except ray.exceptions.RayActorError as e:
                out[i] = MeasureError("internal", f"the measuring actor died twice ({type(e).__name__})")
        return out

    def close(self) -> None:
        for a in self.actors:
            try:
                self.ray.kill(a)
            except Exception:
                pass
        self.actors = []


def use_fleet(backend: str = "gpu", **kw) -> ActorFleet:
    """Register an :class:`ActorFleet` of ``backend`` under ``backend``'s own name (in this
    process): evaluations of that backend measure on the actors, with the same cache keys."""
    from ptxopt.measure.backend_registry import register_backend

    fleet = ActorFleet(backend, **kw)
    register_backend(backend, lambda: fleet, replace=True)
    return fleet


__all__ = ["MeasureWorker", "ActorFleet", "use_fleet"]
