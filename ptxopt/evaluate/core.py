"""The evaluation pipeline for one batch of candidates, in one process.

Per candidate (front half, in order):

1. the pipeline string is parsed and made canonical (``illegal`` if it names
   an unknown pass or conflicting passes); the *pipeline key* is looked up;
2. the original PTX is parsed (``parse``; parsed modules are memoised per
   process, so the candidates of one kernel parse it once) and the passes run
   through :class:`~ptxopt.passmanager.PassManager` (``illegal`` when a pass
   refuses the module as a whole, ``internal`` when a pass crashes);
3. the result is printed and the *result key* looked up: a pipeline that
   changed nothing prints the original's text and hits the cache;
4. ptxas compiles the printed PTX (in a helper thread) while the interpreter
   checks equivalence with the original in this one (what
   :func:`ptxopt.verify.verify` does, with the original's outputs remembered
   across candidates: :mod:`ptxopt.evaluate.equivalence`; skipped as
   ``identical`` when the text is the original's own printing, and as
   ``hints-only`` when it differs only in annotations the interpreter cannot
   observe: :mod:`ptxopt.evaluate.observable`).

Then, per chunk of ``Settings.batch`` candidates: the backend measures every
candidate still ``ok`` (:func:`ptxopt.evaluate.backends.measure_many`; the
``sim`` backend disassembles the whole chunk with one nvdisasm run), and each
result is committed to the cache in its own transaction as soon as it is
final.  :func:`run_batch` pipelines this over helper threads (see there).

Launch for the equivalence check (and the sim's loop profile): the
candidate's corpus manifest entry (``spec``), else its ``geometry``, else the
manifest entry whose kernel name and parameter names match
(:func:`ptxopt.verify.spec_for`), else the documented default
:data:`DEFAULT_GEOMETRY` -- one thread, every pointer a
64 KiB buffer of random float32, 32-bit integers = 1 (the thread count),
floats = 1.0.  When the *original* cannot be run that way (it faults, uses
an instruction the interpreter lacks, needs a scalar it cannot guess) the
result records ``equivalence="inconclusive"`` with the reason and goes on:
its cycles are measured, but a search never takes it as its best (see
:attr:`EvalResult.checked`).  The verdicts are listed in
:mod:`ptxopt.evaluate.result`.

Architecture: ``Settings.arch`` None (the default) means each kernel's own
``.target`` (:func:`ptxopt.toolchain.arch.resolve_arch`: an explicit arch
wins, else ``.target``, else sm_89); every key and result carries the
resolved one (:func:`settings_for`).  When ptxas rejects a candidate, the
original is compiled too: if ptxas rejects the original as well, the result
is marked ``bad_input`` and says so, instead of blaming the pipeline.

Time limits: ``Settings.timeout`` bounds each step of one candidate.  The
passes and the equivalence check run under ``SIGALRM`` (when evaluating on
the main thread); ptxas and nvdisasm get it as their own time limit; the
interpreter and the model also stop at their step budgets.  The worker pool
(:mod:`ptxopt.evaluate.parallel`) is the backstop: it kills a worker whose
current step overruns the limit and records ``timeout`` for the candidate.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import threading
import time
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from ptxopt.verify import DEFAULT_MIN_COVERAGE, DEFAULT_TRIALS, Geometry

from .backends import BackendUnavailable, MeasureError, MeasureJob, backend_version, get_backend, measure_many
from .backends import source_digest
from .cache import SCHEMA_VERSION, EvalCache
from .result import NOT_REACHED, OK, EvalResult, Measurement

#: Launch used for kernels outside the corpus when the caller gives none.
DEFAULT_GEOMETRY = Geometry()

#: Default per-candidate time limit (seconds).
DEFAULT_TIMEOUT = 600.0

#: Candidates per batch (one nvdisasm run, results committed one by one).
DEFAULT_BATCH = 32


@dataclass(frozen=True)
class Candidate:
    """A kernel and the pipeline to apply to it.

    ``ptx`` is the *unoptimised* module text (equivalence is checked against
    it); ``entry`` picks the ``.entry`` (default: the manifest's, else the
    first); ``spec`` is its corpus manifest entry if it has one; ``geometry``
    the launch for kernels outside the corpus; ``name`` what reports call it.
    """

    ptx: str
    pipeline: str = ""
    name: str | None = None
    entry: str | None = None
    spec: Any = None
    geometry: Geometry | None = None

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


# ---------------------------------------------------------------------------
# keys


def sha256(text: str | bytes) -> str:
    return hashlib.sha256(text.encode() if isinstance(text, str) else text).hexdigest()


_FINGERPRINTS: dict = {}


def code_digests() -> dict:
    """Digests of ptxopt's own code: ``front`` decides the printed PTX of a
    (kernel, pipeline), ``evaluator`` the result once the PTX is fixed."""
    d = _FINGERPRINTS.get("code")
    if d is None:
        d = _FINGERPRINTS["code"] = {
            # what decides a result once the printed PTX is fixed
            "evaluator": source_digest("evaluate", "interp", "verify.py", "corpus.py", "toolchain", "prove"),
            # what decides the printed PTX for a (kernel, pipeline)
            "front": source_digest("passes", "analysis", "pipeline.py", "passmanager.py", "emit.py", "parser.py",
                                   "ir.py", "grammar", "opcodes.py", "identity_memo.py", "constexpr.py",
                                   "comments.py"),
        }
    return d


def fingerprint(settings: Settings) -> dict:
    """The settings, tools and code versions every key includes."""
    fp = _FINGERPRINTS.get(settings)
    if fp is None:
        from ptxopt.toolchain import toolchain_versions

        backend = get_backend(settings.backend)
        fp = _FINGERPRINTS[settings] = {
            "schema": SCHEMA_VERSION,
            "arch": settings.arch,
            "backend": settings.backend,
            "backend_version": backend_version(backend),
            "toolchain": toolchain_versions(),
            "trials": settings.trials,
            "profile_loops": settings.profile_loops,
            "min_coverage": settings.min_coverage,
            "prove": settings.prove,
            "code": code_digests()["evaluator"],
        }
    return fp


def _launch_id(spec, geometry) -> str:
    if spec is not None:
        return f"corpus:{spec.id}:{spec.launch}:{[p for p in spec.params]}"
    return f"geometry:{geometry or DEFAULT_GEOMETRY}"


def _digest(doc: dict) -> str:
    return sha256(json.dumps(doc, sort_keys=True, default=str))


def pipeline_key(original: str, pipeline: str, entry: str | None, launch: str, settings: Settings) -> str:
    """Key of a (kernel text, canonical pipeline) request; see :mod:`ptxopt.evaluate.cache`."""
    return _digest({"kind": "pipeline", "original": sha256(original), "pipeline": pipeline, "entry": entry,
                    "launch": launch, "front": code_digests()["front"], **fingerprint(settings)})


def module_key(printed: str, original_printed: str, entry: str, launch: str, settings: Settings) -> str:
    """Key of a printed module: what the result depends on (see :mod:`ptxopt.evaluate.cache`)."""
    return _digest({"kind": "module", "ptx": sha256(printed), "original": sha256(original_printed),
                    "entry": entry, "launch": launch, **fingerprint(settings)})


# ---------------------------------------------------------------------------
# per-process memos and helpers

_MEMO: OrderedDict = OrderedDict()  # sha256(original text) -> _Original
_MEMO_SIZE = 16
_POOL: dict[tuple[str, int], ThreadPoolExecutor] = {}


@dataclass
class _Original:
    module: Any
    printed: str
    programs: dict = field(default_factory=dict)  # interpreter Program, built once
    _observable: str | None = None
    rejected: dict = field(default_factory=dict)  # arch -> ptxas's error for the original text (None: accepted)

    def observable(self) -> str:
        """The original's :func:`~ptxopt.evaluate.observable.observable_form`, computed once."""
        if self._observable is None:
            from .observable import observable_form

            self._observable = observable_form(self.module)
        return self._observable


def _original(text: str, name: str) -> _Original:
    from ptxopt.emit import emit
    from ptxopt.parser import parse

    h = sha256(text)
    o = _MEMO.get(h)
    if o is not None:
        _MEMO.move_to_end(h)
        return o
    m = parse(text, name)
    o = _Original(m, emit(m))
    _MEMO[h] = o
    while len(_MEMO) > _MEMO_SIZE:
        _MEMO.popitem(last=False)
    return o


def _tools(kind: str = "ptxas") -> ThreadPoolExecutor:
    """One helper thread per kind and process: ``ptxas`` runs the compiles in
    order, ``measure`` the previous chunk's measurement."""
    key = (kind, os.getpid())
    pool = _POOL.get(key)
    if pool is None:
        pool = _POOL[key] = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"ptxopt-{kind}")
    return pool


class CandidateTimeout(BaseException):
    """Raised by the SIGALRM handler (a BaseException so that ``except
    Exception`` in passes or the interpreter cannot swallow it)."""


@contextmanager
def deadline(seconds: float | None):
    """Raise :class:`CandidateTimeout` after ``seconds`` (main thread only; else a no-op)."""
    if not seconds or threading.current_thread() is not threading.main_thread() or not hasattr(signal, "SIGALRM"):
        yield
        return

    def _ring(signum, frame):
        raise CandidateTimeout()

    old = signal.signal(signal.SIGALRM, _ring)
    signal.setitimer(signal.ITIMER_REAL, max(seconds, 0.001))
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


# ---------------------------------------------------------------------------
# one candidate's state


@dataclass
class _Work:
    index: int
    cand: Candidate
    settings: Settings
    pipeline: str = ""
    pkey: str | None = None
    key: str | None = None
    entry: str | None = None
    spec: Any = None
    geometry: Any = None
    printed: str | None = None
    module: Any = None
    compiled: Any = None
    changed: bool | None = None
    equivalence: str = "inconclusive"
    equivalence_note: str | None = None
    coverage: float | None = None
    launch: str | None = None
    bad_input: bool = False
    orig: Any = None  # the _Original, once parsed
    timings: dict = field(default_factory=lambda: {"pass": 0.0, "ptxas": 0.0, "verify": 0.0, "backend": 0.0})
    t0: float = field(default_factory=time.perf_counter)
    result: EvalResult | None = None  # set when final
    from_cache: bool = False
    ptx_sha: str | None = None
    ptxas_future: Any = None

    def __post_init__(self):
        self.settings = settings_for(self.cand, self.settings)

    def finish(self, status: str, *, error: str | None = None, m: Measurement | None = None,
               cacheable: bool = True, key: str | None = None) -> EvalResult:
        s = self.settings
        t = dict(self.timings)
        t["total"] = time.perf_counter() - self.t0
        t = {k: round(v, 6) for k, v in t.items()}
        c = self.compiled
        kres = None
        if c is not None:
            kres = c.kernels.get(self.entry) if self.entry else None
            kres = kres or (c.kernel if c.kernels else None)
        estimate = is_estimate(s.backend)
        r = EvalResult(
            kernel=self.cand.label, pipeline=self.pipeline, status=status, backend=s.backend, arch=s.arch,
            estimate=estimate,
            cycles=m.cycles if (m is not None and status == OK) else None,
            registers=_first(m and m.registers, kres and kres.registers),
            spill_store_bytes=_first(m and m.spill_store_bytes, kres and kres.spill_store_bytes),
            spill_load_bytes=_first(m and m.spill_load_bytes, kres and kres.spill_load_bytes),
            sass_instructions=m.sass_instructions if m is not None else None,
            equivalence=self.equivalence,
            equivalence_note=self.equivalence_note if (self.equivalence_note or self.equivalence != "inconclusive")
            else NOT_REACHED,
            coverage=self.coverage, launch=self.launch, bad_input=self.bad_input, changed=self.changed,
            entry=self.entry, error=error, fallback=m.fallback if m is not None else None,
            trip_counts=(m.extra or {}).get("trip_counts") if m is not None else None,
            notes=tuple(m.notes) if m is not None else (), timings=t, cache_hit=False,
            key=key or self.key or self.pkey, ptxas_version=c.ptxas_version if c is not None else None,
            spread=m.spread if m is not None else None, cacheable=cacheable,
            expected_error=(m.extra or {}).get("expected_error") if (m is not None and status == OK) else None,
        )
        self.result = r
        return r


def _first(*vals):
    for v in vals:
        if v is not None and v is not False:
            return v
    return None


def is_estimate(backend: str) -> bool:
    """Are this backend's cycles a model's estimate (not a measurement)?"""
    try:
        return bool(get_backend(backend).is_estimate)
    except Exception:
        return backend == "sim"


def _one_line(e: BaseException) -> str:
    s = str(e).strip()
    return s if s else type(e).__name__


# ---------------------------------------------------------------------------
# the front half


def _usable(hit: EvalResult, settings: Settings) -> bool:
    if hit.bad_input:  # a rejected original, cached by an older ptxopt: its lines may be another file's
        return False
    if hit.status != "timeout":
        return True
    limit = hit.timings.get("limit")
    return settings.timeout is not None and limit is not None and settings.timeout <= limit


def _front(w: _Work, cache: EvalCache | None) -> None:
    """Steps 1-4; leaves ``w.result`` set when the candidate is already final."""
    from ptxopt.emit import emit
    from ptxopt.parser import ParseError
    from ptxopt.passes.base import PassError
    from ptxopt.passmanager import PassFailure, PassManager
    from ptxopt.pipeline import Pipeline, PipelineError

    s, cand = w.settings, w.cand
    t = time.perf_counter()
    w.spec = cand.spec
    w.geometry = cand.geometry
    try:
        pl = Pipeline.parse(cand.pipeline)
        w.pipeline = str(pl)
    except PipelineError as e:
        w.pipeline = cand.pipeline.strip()
        w.pkey = pipeline_key(cand.ptx, w.pipeline, cand.entry, _launch_id(w.spec, w.geometry), s)
        if _hit(w, cache, cache.resolve(w.pkey) if cache else None):
            return
        w.finish("illegal", error=_one_line(e))
        return
    w.pkey = pipeline_key(cand.ptx, w.pipeline, cand.entry, _launch_id(w.spec, w.geometry), s)
    if cache is not None and _hit(w, cache, cache.resolve(w.pkey)):
        return
    try:
        orig = _original(cand.ptx, cand.label)
    except ParseError as e:
        w.timings["pass"] = time.perf_counter() - t
        w.finish("parse", error=_one_line(e))
        return
    w.orig = orig
    m = orig.module
    entries = [f.name for f in m.entries]
    w.entry = cand.entry or (w.spec.entry if w.spec is not None else None) or (entries[0] if entries else None)
    if w.entry not in entries:
        w.timings["pass"] = time.perf_counter() - t
        w.finish("unsupported", error=f"no .entry named {w.entry}" if w.entry else "the module has no .entry")
        return
    try:
        run = PassManager(pl).run(m)
    except (PassFailure, PassError, Exception) as e:
        w.timings["pass"] = time.perf_counter() - t
        w.finish("internal", error=f"a pass crashed: {_one_line(e)}", cacheable=False)
        return
    refused = [r for r in run.records if r.skipped.startswith("illegal")]
    if refused:
        w.timings["pass"] = time.perf_counter() - t
        r = refused[0]
        w.finish("illegal", error=f"pass '{r.name}' refuses this module: {r.skipped[len('illegal: '):]}")
        return
    try:
        printed = emit(run.module)
    except Exception as e:
        w.timings["pass"] = time.perf_counter() - t
        w.finish("internal", error=f"printing the transformed module failed: {_one_line(e)}", cacheable=False)
        return
    w.printed, w.module = printed, run.module
    w.changed = printed != orig.printed
    w.ptx_sha = sha256(printed)
    if w.spec is None and w.geometry is None:
        w.spec = _spec_for(orig, w.entry)
    w.key = module_key(printed, orig.printed, w.entry, _launch_id(w.spec, w.geometry), s)
    w.timings["pass"] = time.perf_counter() - t
    if cache is not None:
        hit = cache.get(w.key)
        if hit is not None and _usable(hit, s):
            cache.alias(w.pkey, w.key)
            _hit(w, cache, hit)
            return

    # 4: ptxas in a helper thread (collected by _collect_compile), equivalence here
    from ptxopt.toolchain import compile_ptx

    w.ptxas_future = _tools().submit(_timed, compile_ptx, printed, s.arch, timeout=s.timeout or DEFAULT_TIMEOUT)
    t = time.perf_counter()
    _verify(w, orig)  # a CandidateTimeout leaves ptxas to finish (or time out) on its own
    w.timings["verify"] = time.perf_counter() - t


def _collect_compile(w: _Work) -> None:
    """Wait for the candidate's ptxas run; ptxas failures decide before verification failures."""
    fut, w.ptxas_future = w.ptxas_future, None
    try:
        w.compiled, w.timings["ptxas"] = fut.result()
    except Exception as e:
        _toolchain_failure(w, e)
        return
    if w.result is not None:  # verification failed: report it with ptxas's resource figures
        w.finish(w.result.status, error=w.result.error)


def _timed(fn, *args, **kw):
    t = time.perf_counter()
    out = fn(*args, **kw)
    return out, time.perf_counter() - t


def lookup(cand: Candidate, settings: Settings, cache: EvalCache) -> EvalResult | None:
    """The cached result of ``cand`` by its pipeline key, without parsing anything; None on a miss."""
    from ptxopt.pipeline import Pipeline, PipelineError

    settings = settings_for(cand, settings)
    try:
        pipeline = str(Pipeline.parse(cand.pipeline))
    except PipelineError:
        pipeline = cand.pipeline.strip()
    hit = cache.resolve(pipeline_key(cand.ptx, pipeline, cand.entry, _launch_id(cand.spec, cand.geometry), settings))
    if hit is None or not _usable(hit, settings):
        return None
    return hit.replace(cache_hit=True, kernel=cand.label, pipeline=pipeline)


def _hit(w: _Work, cache, hit: EvalResult | None) -> bool:
    if hit is None or not _usable(hit, w.settings):
        return False
    w.result = hit.replace(cache_hit=True, kernel=w.cand.label, pipeline=w.pipeline)
    w.from_cache = True
    return True


def _spec_for(orig: _Original, entry: str):
    from ptxopt.interp.errors import InterpError
    from ptxopt.verify import spec_for

    try:
        return spec_for(_program(orig), entry)
    except InterpError:
        return None


def _program(orig: _Original):
    from ptxopt.interp import Program

    p = orig.programs.get("p")
    if p is None:
        p = orig.programs["p"] = Program(orig.module)
    return p


def _toolchain_failure(w: _Work, e: BaseException) -> None:
    from ptxopt.toolchain import PtxasError, ToolchainTimeout, ToolNotFound, UnsupportedArch
    from ptxopt.toolchain import UnsupportedPTXVersion

    if isinstance(e, PtxasError):
        why = _original_rejected(w)
        if why is not None:
            # not cached: the message quotes the lines of the user's file, and every file that prints
            # the same (blank lines, comments) shares this result's key
            w.bad_input = True
            w.finish("ptxas", error=f"ptxas rejects the original kernel for {w.settings.arch} (bad input, not the "
                                    f"pipeline's doing; give the arch it was written for with --arch): {why}",
                     cacheable=False)
        elif w.changed is False:
            w.finish("internal", error=f"ptxas accepts the original but not its reprinting (a printer bug): "
                                       f"{_one_line(e)}", cacheable=False)
        else:
            w.finish("ptxas", error=_one_line(e))
    elif isinstance(e, ToolchainTimeout):
        w.timings["limit"] = w.settings.timeout or 0
        w.finish("timeout", error=_one_line(e))
    elif isinstance(e, (UnsupportedPTXVersion, UnsupportedArch)):
        w.finish("unsupported", error=_one_line(e))
    elif isinstance(e, ToolNotFound):
        w.finish("unsupported", error=_one_line(e), cacheable=False)
    else:
        w.finish("internal", error=f"compiling failed: {type(e).__name__}: {_one_line(e)}", cacheable=False)


def _original_rejected(w: _Work) -> str | None:
    """ptxas's error for the candidate's original text (as given) on the
    candidate's arch, None when ptxas accepts it; memoised per original."""
    from ptxopt.toolchain import PtxasError, compile_ptx

    orig, arch = w.orig, w.settings.arch
    if orig is None:
        return None
    if arch not in orig.rejected:
        try:
            compile_ptx(w.cand.ptx, arch, timeout=w.settings.timeout or DEFAULT_TIMEOUT)
            orig.rejected[arch] = None
        except PtxasError as e:
            orig.rejected[arch] = _one_line(e)
        except Exception:  # a timeout or a missing tool says nothing about the original
            return None
    return orig.rejected[arch]


def _launch_text(spec, geometry) -> str:
    if spec is not None:
        launch = spec.launch
        what = "manifest entry" if spec.path else "contract"  # a contract file's spec has no path
        return f"{what} {spec.id}: grid {tuple(launch.grid)}, block {tuple(launch.block)}"
    return f"grid {tuple(geometry.grid)}, block {tuple(geometry.block)}"


def _verify(w: _Work, orig: _Original) -> None:
    """Set the candidate's verdict (see :mod:`ptxopt.evaluate.result`,
    decided by :func:`ptxopt.evaluate.equivalence.decide`); a counterexample
    or a failure of the transformed kernel also finishes it."""
    from .equivalence import decide
    from .observable import observable_form

    spec, geometry = w.spec, w.geometry
    if w.changed and spec is None and geometry is None:
        geometry = DEFAULT_GEOMETRY
    launch = _launch_text(spec, geometry) if w.changed else None
    d = decide(changed=w.changed, same_observable=lambda: orig.observable() == observable_form(w.module),
               original_program=lambda: _program(orig), module=w.module, entry=w.entry,
               reference_key=f"{sha256(orig.printed)}/{w.entry}/{_launch_id(spec, geometry)}",
               launch=launch, trials=w.settings.trials, spec=spec, geometry=geometry,
               min_coverage=w.settings.min_coverage,
               original_module=(lambda: orig.module) if w.settings.prove else None)
    w.equivalence, w.equivalence_note = d.verdict, d.note
    if d.verdict in ("identical", "hints-only"):
        return
    w.geometry, w.launch = geometry, launch
    if d.coverage is not None:
        w.coverage = d.coverage
    if d.finish is not None:
        if d.finish == "timeout":
            w.timings["limit"] = w.settings.timeout or 0
        w.finish(d.finish, error=d.error)


# ---------------------------------------------------------------------------
# a batch


def run_batch(candidates: Sequence[Candidate], settings: Settings, cache: EvalCache | None, *,
              indices: Sequence[int] | None = None,
              on_start: Callable[[list[int]], None] | None = None,
              on_result: Callable[[int, EvalResult], None] | None = None) -> list[EvalResult]:
    """Evaluate ``candidates`` in this process; see the module doc.  Never raises
    for a candidate's failure (BackendUnavailable for an unusable backend is
    raised before any work).

    The work is pipelined over three threads: this one parses, runs the
    passes and checks equivalence, candidate after candidate; a helper runs
    ptxas (a subprocess) for each candidate as soon as it is printed; a second
    helper measures each chunk of ``settings.batch`` candidates once their
    ptxas runs are done (one nvdisasm run, then the model).  Results are
    committed here, as their chunk completes.  A hardware backend
    (``is_estimate`` False) measures in this thread, chunk after chunk.
    """
    backend = get_backend(settings.backend)
    fingerprint(settings)
    idx = list(indices) if indices is not None else list(range(len(candidates)))
    works = [_Work(i, c, settings) for i, c in zip(idx, candidates)]
    overlap = bool(getattr(backend, "is_estimate", False))

    def done(w: _Work) -> None:
        r = w.result
        if cache is not None and not w.from_cache and r.cacheable and r.key is not None:
            cache.put(r, w.pkey, w.ptx_sha)
        if on_result is not None:
            on_result(w.index, r)

    def guarded(w: _Work, step, what: str) -> None:
        try:
            with deadline(settings.timeout):
                step(w)
        except CandidateTimeout:
            w.timings["limit"] = settings.timeout or 0
            w.finish("timeout", error=f"the candidate took longer than {settings.timeout:g} s ({what})")
        except Exception as e:  # a bug in the evaluator: a result, not a crash of the search
            w.finish("internal", error=f"evaluator error: {type(e).__name__}: {_one_line(e)}", cacheable=False)

    def settle(chunk: list[_Work], out: list, seconds: float) -> None:
        measured = [w for w in chunk if w.result is None]
        _settle(measured, out, seconds / max(1, len(measured)), settings)
        for w in chunk:
            done(w)

    inflight: list[tuple[list[_Work], Any]] = []  # chunks whose ptxas runs / measurement is under way

    def drain(block: bool) -> None:
        while inflight and (block or inflight[0][1].done()):
            chunk, fut = inflight.pop(0)
            if on_start is not None:
                on_start([w.index for w in chunk])
            out, seconds = fut.result()
            settle(chunk, out, seconds)

    size = max(1, settings.batch)
    for start in range(0, len(works), size):
        chunk = works[start: start + size]
        for w in chunk:
            if on_start is not None:
                on_start([w.index])
            guarded(w, lambda w: _front(w, cache), "passes and equivalence check")
            if w.result is not None and w.ptxas_future is None:
                done(w)
        ready = [w for w in chunk if w.ptxas_future is not None]
        if ready:
            if overlap:
                inflight.append((ready, _tools("measure").submit(_collect_and_measure, backend, ready, settings)))
            else:
                if on_start is not None:
                    on_start([w.index for w in ready])
                for w in ready:
                    guarded(w, _collect_compile, "ptxas")
                settle(ready, *_collect_and_measure(backend, ready, settings))
        drain(block=False)
    drain(block=True)
    return [w.result for w in works]


def _collect_and_measure(backend, chunk: list[_Work], settings: Settings) -> tuple[list, float]:
    """Wait for the chunk's ptxas runs, then measure the candidates still ``ok``."""
    for w in chunk:
        if w.ptxas_future is not None:
            try:
                _collect_compile(w)
            except Exception as e:
                w.finish("internal", error=f"evaluator error: {type(e).__name__}: {_one_line(e)}", cacheable=False)
    measured = [w for w in chunk if w.result is None]
    t = time.perf_counter()
    out = _measure(backend, measured, settings) if measured else []
    return out, time.perf_counter() - t


def _measure(backend, chunk: list[_Work], settings: Settings) -> list:
    """The backend's verdicts for ``chunk`` (Measurements or exceptions); never raises."""
    jobs = [MeasureJob(w.printed, w.settings.arch, w.spec, w.entry, w.compiled, w.module,
                       w.geometry or (DEFAULT_GEOMETRY if w.spec is None else None), settings.profile_loops)
            for w in chunk]
    try:
        with deadline(settings.timeout * len(chunk) if settings.timeout else None):
            out = list(measure_many(backend, jobs))
    except (CandidateTimeout, Exception) as e:
        out = [e] * len(chunk)
    for k, (w, m) in enumerate(zip(chunk, out)):
        if isinstance(m, Measurement) and m.sass_instructions is None and w.compiled is not None:
            try:
                out[k] = _with_sass_count(m, w)
            except Exception:
                pass
    return out


def _settle(chunk: list[_Work], out: list, share: float, settings: Settings) -> None:
    for w, m in zip(chunk, out):
        w.timings["backend"] = share
        if isinstance(m, Measurement):
            w.finish(OK, m=m)
        else:
            _backend_failure(w, m)


def _with_sass_count(m: Measurement, w: _Work) -> Measurement:
    from dataclasses import replace

    from .disasm import disassemble_many

    lst = disassemble_many([w.compiled.cubin])[0]
    if isinstance(lst, Exception):
        return m
    return replace(m, sass_instructions=len(lst.functions.get(w.entry, ())))


def _backend_failure(w: _Work, e: BaseException) -> None:
    from ptxopt.toolchain import ToolchainError, ToolchainTimeout

    if isinstance(e, CandidateTimeout) or isinstance(e, ToolchainTimeout):
        w.timings["limit"] = w.settings.timeout or 0
        w.finish("timeout", error=f"measuring took too long: {_one_line(e)}" if not isinstance(e, CandidateTimeout)
                 else f"measuring took longer than {w.settings.timeout:g} s")
    elif isinstance(e, MeasureError):
        w.finish(e.category, error=_one_line(e))
    elif isinstance(e, BackendUnavailable):
        w.finish("unsupported", error=_one_line(e), cacheable=False)
    elif isinstance(e, ToolchainError):
        w.finish("unsupported", error=f"{w.settings.backend} backend: {_one_line(e)}")
    else:
        w.finish("internal", error=f"{w.settings.backend} backend failed: {type(e).__name__}: {_one_line(e)}",
                 cacheable=False)


__all__ = ["Candidate", "Settings", "settings_for", "run_batch", "lookup", "as_candidate", "pipeline_key", "module_key",
           "fingerprint",
           "DEFAULT_GEOMETRY", "DEFAULT_TIMEOUT", "DEFAULT_BATCH", "CandidateTimeout", "deadline"]
