"""The evaluation cache's keys (see :mod:`ptxopt.evaluate.cache` for what they mean).

A key is the sha256 of a JSON document: what the result depends on -- the
kernel text (or the printed module), the entry, the launch, the settings,
the tool versions, the backend's version and the digests of ptxopt's own
code (:func:`ptxopt.passes.registry.code_digests`).  They are computed here, in one
place, so that the preparation, the batch runner and the worker pool agree
on them byte for byte.
"""

from __future__ import annotations

import hashlib
import json

from ptxopt.passes.registry import code_digests
from ptxopt.support.digests import evaluator_digest
from ptxopt.measure.backend_registry import backend_version, get_backend
from ptxopt.support.session_state import Slot

from .cache import SCHEMA_VERSION
from .candidate import Candidate, Settings, performance_for


def sha256(text: str | bytes) -> str:
    return hashlib.sha256(text.encode() if isinstance(text, str) else text).hexdigest()


_FINGERPRINTS = Slot("evaluate.keys.fingerprints", dict)  # per evaluation session


def fingerprint(settings: Settings) -> dict:
    """The settings, tools and code versions every key includes."""
    from ptxopt.toolchain.ptxas import environment_key

    memo = (settings, environment_key())  # another PTXOPT_PTXAS(_FLAGS) in this process: other tools
    fps = _FINGERPRINTS.get()
    fp = fps.get(memo)
    if fp is None:
        from ptxopt.toolchain import toolchain_versions

        backend = get_backend(settings.backend)
        fp = fps[memo] = {
            "schema": SCHEMA_VERSION,
            "arch": settings.arch,
            "backend": settings.backend,
            "backend_version": backend_version(backend),
            "toolchain": toolchain_versions(),
            "trials": settings.trials,
            "profile_loops": settings.profile_loops,
            "min_coverage": settings.min_coverage,
            "prove": settings.prove,
            "objective": settings.objective,
            "l2": settings.l2,
            "code": evaluator_digest(),
        }
    return fp


def given_launch(cand: Candidate):
    """The check launch the candidate itself names: its contract's, else its
    manifest entry's; None when it names none (resolved after parsing)."""
    if cand.launch is not None:
        return cand.launch
    if cand.spec is not None:
        from ptxopt.equivalence.launch import from_spec

        return from_spec(cand.spec)
    return None


def launch_id(launch, performance=None) -> str:
    """What the keys record of the launches: the check launch (every field
    that changes a verdict; None: none given) and the performance launch
    (every field that changes an estimate)."""
    out = "none" if launch is None else launch.key()
    return out if performance is None else f"{out}|{performance.key()}"


def _digest(doc: dict) -> str:
    return sha256(json.dumps(doc, sort_keys=True, default=str))


def pipeline_key(original: str, pipeline: str, entry: str | None, launch: str, settings: Settings) -> str:
    """Key of a (kernel text, canonical pipeline) request; see :mod:`ptxopt.evaluate.cache`."""
    return _digest({"kind": "pipeline", "original": sha256(original), "pipeline": pipeline, "entry": entry,
                    "launch": launch, "front": code_digests()["front"], **fingerprint(settings)})


def request_key(cand: Candidate, settings: Settings) -> str:
    """:func:`pipeline_key` of ``cand`` (its canonical pipeline, its launch);
    ``settings`` resolved for it (:func:`~ptxopt.evaluate.candidate.settings_for`)."""
    return pipeline_key(keyed_text(cand.ptx, cand), cand.pipeline, cand.entry,
                        launch_id(given_launch(cand), performance_for(cand)), settings)


def keyed_text(text: str, cand: Candidate) -> str:
    """``text`` as the keys see it: with the digest of the text ``cand`` was rewritten from, if any
    (the DRAM floor carried from it changes the estimate)."""
    return text if cand.rewritten_from is None else f"{text}\n// rewritten from {sha256(cand.rewritten_from)}"


def module_key(printed: str, original_printed: str, entry: str, launch: str, settings: Settings) -> str:
    """Key of a printed module: what the result depends on (see :mod:`ptxopt.evaluate.cache`)."""
    return _digest({"kind": "module", "ptx": sha256(printed), "original": sha256(original_printed),
                    "entry": entry, "launch": launch, **fingerprint(settings)})


__all__ = ["sha256", "fingerprint", "launch_id", "given_launch", "pipeline_key", "request_key", "module_key",
           "keyed_text"]
