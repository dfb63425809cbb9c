"""What is evaluated and how: :class:`Candidate`, :class:`Settings` and their defaults.

These are the evaluator's input types, shared by the preparation, the keys,
the batch runner and the worker pool; they live apart so that each of those
can import them without importing the others.

Architecture: ``Settings.arch`` None (the default) means each kernel's own
``.target`` (:func:`ptxopt.toolchain.arch.resolve_arch`: an explicit arch
wins, else ``.target``, else ``DEFAULT_ARCH``); every key and result carries the
resolved one (:func:`settings_for`).

Pipeline: a Candidate parses and checks its pipeline once, when it is built
(:func:`canonical_pipeline`), and holds the result: ``pipeline`` is the
canonical text (the cache keys' and the results' spelling), ``parsed`` the
:class:`~ptxopt.passes.pipeline.Pipeline` the pass manager runs, or None with the
reason in ``pipeline_error`` (the evaluator reports such a candidate as
``illegal`` with that message). Nothing downstream parses the string again.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from ptxopt.equivalence.trial_budget import DEFAULT_MIN_COVERAGE, DEFAULT_TRIALS

if TYPE_CHECKING:
    from ptxopt.passes.pipeline import Pipeline, PipelineError

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

    ``pipeline`` is given as text or as a :class:`~ptxopt.passes.pipeline.Pipeline`
    and stored canonical (see the module doc): ``Candidate(ptx, " vec_ld ,
    cache_cg").pipeline == "vec_ld,cache_cg"``; ``parsed`` and
    ``pipeline_error`` follow from it.
    """

    ptx: str
    pipeline: str = ""
    name: str | None = None
    entry: str | None = None
    spec: Any = None
    launch: Any = None
    #: the performance Launch (role performance: what the user runs, for the throughput objective); None: the
    #: manifest entry's ``performance`` when it has one, else unknown
    performance: Any = None
    #: the text ``ptx`` was rewritten from, when ``ptx`` is already a rewrite (a pair estimate): its exact
    #: DRAM floor is carried to ``ptx`` (:mod:`ptxopt.analysis.carried_footprint`); part of the keys
    rewritten_from: str | None = None
    parsed: "Pipeline | None" = field(default=None, init=False, repr=False, compare=False)
    pipeline_error: "PipelineError | None" = field(default=None, init=False, repr=False, compare=False)
    #: the module ``pipeline`` gives, as the caller already built it (a search state's child:
    #: :meth:`with_built`); the evaluator measures it instead of applying the passes again. Not part
    #: of equality, not pickled (a worker process applies the passes itself), dropped by ``replace``
    built: Any = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self):
        if not isinstance(self.ptx, str):  # not a TypeError from deep inside hashing or parsing
            from ptxopt.ptx.parser import expected_text

            raise TypeError(expected_text("Candidate()", self.ptx))
        from ptxopt.passes.pipeline import Pipeline

        if not isinstance(self.pipeline, (str, Pipeline)):
            raise TypeError(f"Candidate() takes the pipeline as a str such as 'vec_ld,maxnreg_128' or a Pipeline, "
                            f"not {type(self.pipeline).__name__}")
        parsed, text, error = canonical_pipeline(self.pipeline)
        object.__setattr__(self, "pipeline", text)
        object.__setattr__(self, "parsed", parsed)
        object.__setattr__(self, "pipeline_error", error)

    def with_built(self, built) -> "Candidate":
        """This candidate carrying ``built`` (:class:`ptxopt.evaluate.prefix.Built`: the bound passes
        of ``pipeline``, the module after them, the pass records), which the evaluator then measures."""
        from dataclasses import replace

        out = replace(self)
        object.__setattr__(out, "built", built)
        return out

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["built"] = None
        return state

    @classmethod
    def from_corpus(cls, kernel, pipeline: str = "") -> "Candidate":
        """``kernel``: a corpus id or :class:`~ptxopt.kernels.corpus.KernelSpec`."""
        from ptxopt.kernels.corpus import KernelSpec, get

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
    #: try the translation validator (:mod:`ptxopt.equivalence.prove`) before the interpreter: a ``proved``
    #: candidate skips the interpreter launches; otherwise the interpreter decides as before
    prove: bool = True
    #: ``latency`` (one warp, the published sm_89 measure) or ``throughput`` (the whole performance launch);
    #: None: each candidate's default (:func:`objective_for`)
    objective: str | None = None
    #: the throughput objective's L2 at the launch's start: ``cold`` (flushed, as GPU benchmarks measure) or
    #: ``warm`` (:mod:`ptxopt.sim.throughput`); the latency objective is calibrated warm and ignores it
    l2: str = "cold"


def canonical_pipeline(pipeline) -> "tuple[Pipeline | None, str, PipelineError | None]":
    """``(parsed, canonical text, None)`` for a pipeline that parses and has
    no conflicting passes, else ``(None, the text stripped, the error)``.
    ``pipeline``: text or a :class:`~ptxopt.passes.pipeline.Pipeline` (checked for
    conflicts like parsed text: one built with ``+`` is not)."""
    from ptxopt.passes.pipeline import Pipeline, PipelineError

    if isinstance(pipeline, Pipeline):
        try:
            pipeline.check_conflicts()
        except PipelineError as e:
            return None, str(pipeline), e
        return pipeline, str(pipeline), None
    return _parse(pipeline)


@lru_cache(maxsize=1024)
def _parse(text: str) -> "tuple[Pipeline | None, str, PipelineError | None]":
    # memoised: copies of a candidate (dataclasses.replace) hand their canonical text back in
    from ptxopt.passes.pipeline import Pipeline, PipelineError

    try:
        parsed = Pipeline.parse(text)
    except PipelineError as e:
        return None, text.strip(), e.with_traceback(None)
    return parsed, str(parsed), None


OBJECTIVES = ("latency", "throughput")


def performance_for(cand: Candidate):
    """The candidate's performance launch: its own, else its manifest
    entry's (with the distinct bytes its performance-size buffers span, the
    DRAM roofline's input); None: unknown."""
    if cand.performance is not None:
        return cand.performance
    return _manifest_performance(cand.spec) if cand.spec is not None else None


def entry_of(cand: Candidate, module) -> str | None:
    """The entry evaluated (and whose launch binds): the candidate's, else
    its manifest entry's, else ``module``'s first; None: it has none."""
    if cand.entry:
        return cand.entry
    if cand.spec is not None and cand.spec.entry:
        return cand.spec.entry
    return next((f.name for f in module.entries), None)


def bind_launch(p, performance, entry: str | None):
    """``p`` (a pass or a :class:`~ptxopt.passes.pipeline.Pipeline`) as applied for
    the ``performance`` launch of ``entry``: each pass that uses the launch
    (:attr:`ptxopt.passes.base.Pass.uses_launch`: ``launch_bounds`` takes
    its block) bound to it; unchanged when the launch is unknown (None).
    The one way the evaluator, the search's states and ``search --emit``
    apply a pipeline, so that a search state is the module the evaluator
    measures for its pipeline. Raises :class:`~ptxopt.passes.base.PassError`
    when a pass names a block the launch does not have."""
    return p if performance is None else p.with_launch(performance, entry)


@lru_cache(maxsize=512)
def _manifest_performance(spec):
    from dataclasses import replace

    from ptxopt.equivalence.launch import performance_of
    from ptxopt.sim.occupancy import dram_bytes_of_spec

    launch = performance_of(spec)
    if launch is None:
        return None
    return replace(launch, footprint_bytes=dram_bytes_of_spec(spec.performance_spec()) or None)


def objective_for(cand: Candidate, objective: str | None = None) -> str:
    """The one rule for the default objective: ``objective`` when given;
    else ``latency`` for the single-thread gemm_tile family (the single-warp
    figures its hardware work measured) and for kernels without a
    performance launch; ``throughput`` when one is known."""
    if objective:
        return objective
    if cand.spec is not None and cand.spec.family == "gemm_tile":
        return "latency"
    return "throughput" if performance_for(cand) is not None else "latency"


def settings_for(cand: Candidate, settings: Settings) -> Settings:
    """``settings`` resolved for ``cand``: the architecture (the explicit
    one, else the module's ``.target``, else ``DEFAULT_ARCH``) and the
    objective (:func:`objective_for`), as keys and results use them."""
    if settings.arch and settings.objective:
        return settings
    from dataclasses import replace

    from ptxopt.toolchain.arch import resolve_arch

    return replace(settings, arch=settings.arch or resolve_arch(cand.ptx),
                   objective=objective_for(cand, settings.objective))


def as_candidate(item) -> Candidate:
    """Accept a :class:`Candidate`, ``(ptx_or_corpus_id_or_spec, pipeline)``, or a KernelSpec."""
    from ptxopt.kernels.corpus import KernelSpec

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



__all__ = ["Candidate", "Settings", "settings_for", "objective_for", "performance_for", "OBJECTIVES", "as_candidate", "canonical_pipeline",
           "DEFAULT_TIMEOUT", "DEFAULT_BATCH"]
