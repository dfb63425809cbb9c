"""What is evaluated and how: :class:`Candidate`, :class:`Settings` and their defaults.

These are the evaluator's input types, shared by the front end, the keys,
the batch runner and the worker pool; they live apart so that each of those
can import them without importing the others.

Architecture: ``Settings.arch`` None (the default) means each kernel's own
``.target`` (:func:`ptxopt.toolchain.arch.resolve_arch`: an explicit arch
wins, else ``.target``, else sm_89); every key and result carries the
resolved one (:func:`settings_for`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ptxopt.equivalence.interpret import DEFAULT_MIN_COVERAGE, DEFAULT_TRIALS

#: Default per-candidate time limit (seconds).
DEFAULT_TIMEOUT = 600.0

#: Candidates per batch (one nvdisasm run, results committed one by one).
DEFAULT_BATCH = 32


@dataclass(frozen=True)
class Candidate:
    """A kernel and the pipeline to apply to it.

    ``ptx`` is the *unoptimised* module text (equivalence is checked against
    it); ``entry`` picks the ``.entry`` (default: the manifest's, else the
    first); ``spec`` is its corpus manifest entry if it has one; ``launch``
    the check :class:`~ptxopt.equivalence.launch.Launch` a contract or options
    gave (None: the manifest entry's, else one matched in the corpus, else a
    guessed launch, on which no interpreter run says ``equal``); ``name`` what
    reports call it.
    """

    ptx: str
    pipeline: str = ""
    name: str | None = None
    entry: str | None = None
    spec: Any = None
    launch: Any = None

    @classmethod
    def from_corpus(cls, kernel, pipeline: str = "") -> "Candidate":
        """``kernel``: a corpus id or :class:`~ptxopt.corpus.KernelSpec`."""
        from ptxopt.corpus import KernelSpec, get

        spec = kernel if isinstance(kernel, KernelSpec) else get(kernel)
        return cls(spec.ptx_text(), pipeline, name=spec.id, entry=spec.entry, spec=spec)

    @property
    def label(self) -> str:
        if self.name:
            return self.name
        if self.spec is not None:
            return self.spec.id
        return self.entry or "<kernel>"


@dataclass(frozen=True)
class Settings:
    """How candidates are evaluated; every field but ``timeout``/``batch`` is part of the cache key."""

    arch: str | None = None  # None: each kernel's own .target (settings_for)
    backend: str = "sim"
    trials: int = DEFAULT_TRIALS  # interpreter launches compared per candidate
    timeout: float | None = DEFAULT_TIMEOUT  # seconds per candidate; None: no limit
    batch: int = DEFAULT_BATCH
    profile_loops: bool = True  # sim: loop trip counts from the interpreter
    #: below this output coverage (or with regular launches the original could not run) "equal"
    #: becomes "inconclusive"; None: never (what ``ptxopt verify --min-coverage`` also defaults to)
    min_coverage: float | None = DEFAULT_MIN_COVERAGE
    #: try the translation validator (:mod:`ptxopt.prove`) before the interpreter: a ``proved``
    #: candidate skips the interpreter launches; otherwise the interpreter decides as before
    prove: bool = True


def settings_for(cand: Candidate, settings: Settings) -> Settings:
    """``settings`` with the architecture resolved for ``cand``: the explicit
    one, else the module's ``.target``, else sm_89 (what keys and results use)."""
    if settings.arch:
        return settings
    from dataclasses import replace

    from ptxopt.toolchain.arch import resolve_arch

    return replace(settings, arch=resolve_arch(cand.ptx))


def as_candidate(item) -> Candidate:
    """Accept a :class:`Candidate`, ``(ptx_or_corpus_id_or_spec, pipeline)``, or a KernelSpec."""
    from ptxopt.corpus import KernelSpec

    if isinstance(item, Candidate):
        return item
    if isinstance(item, KernelSpec):
        return Candidate.from_corpus(item)
    if isinstance(item, tuple) and len(item) == 2:
        what, pipeline = item
        if isinstance(what, KernelSpec):
            return Candidate.from_corpus(what, pipeline)
        if isinstance(what, str) and what.startswith("corpus:"):
            return Candidate.from_corpus(what[len("corpus:"):], pipeline)
        return Candidate(what, pipeline)
    raise TypeError(f"cannot evaluate {type(item).__name__}: give a Candidate or (ptx, pipeline)")



__all__ = ["Candidate", "Settings", "settings_for", "as_candidate", "DEFAULT_TIMEOUT",
           "DEFAULT_BATCH"]
