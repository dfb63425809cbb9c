"""The front half of an evaluation: from (kernel, pipeline) to printed, compiled, checked PTX.

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

It ends where the backend begins: :mod:`ptxopt.evaluate.batch` collects the
ptxas runs, measures and commits.  :func:`lookup` answers a request from the
cache by its pipeline key alone, without parsing anything.

Launch for the equivalence check (and the sim's loop profile): the
candidate's corpus manifest entry (``spec``), else its ``geometry``, else the
manifest entry whose kernel name and parameter names match
(:func:`ptxopt.verify.spec_for`), else the documented default
:data:`~ptxopt.evaluate.candidate.DEFAULT_GEOMETRY` -- one thread, every pointer a
64 KiB buffer of random float32, 32-bit integers = 1 (the thread count),
floats = 1.0.  When the *original* cannot be run that way (it faults, uses
an instruction the interpreter lacks, needs a scalar it cannot guess) the
result records ``equivalence="inconclusive"`` with the reason and goes on:
its cycles are measured, but a search never takes it as its best (see
:attr:`EvalResult.checked`).  The verdicts are listed in
:mod:`ptxopt.evaluate.result`.

When ptxas rejects a candidate, the original is compiled too: if ptxas
rejects the original as well, the result is marked ``bad_input`` and says
so, instead of blaming the pipeline.
"""

from __future__ import annotations

import os
import time
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from .cache import EvalCache
from .candidate import DEFAULT_GEOMETRY, DEFAULT_TIMEOUT, Candidate, Settings, settings_for
from .keys import launch_id, module_key, pipeline_key, sha256
from .result import EvalResult
from .work import Work, one_line

_MEMO: OrderedDict = OrderedDict()  # sha256(original text) -> Original
_MEMO_SIZE = 16
_POOL: dict[tuple[str, int], ThreadPoolExecutor] = {}


@dataclass
class Original:
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


def original(text: str, name: str) -> Original:
    from ptxopt.emit import emit
    from ptxopt.parser import parse

    h = sha256(text)
    o = _MEMO.get(h)
    if o is not None:
        _MEMO.move_to_end(h)
        return o
    m = parse(text, name)
    o = Original(m, emit(m))
    _MEMO[h] = o
    while len(_MEMO) > _MEMO_SIZE:
        _MEMO.popitem(last=False)
    return o


def tools(kind: str = "ptxas") -> ThreadPoolExecutor:
    """One helper thread per kind and process: ``ptxas`` runs the compiles in
    order, ``measure`` the previous chunk's measurement."""
    key = (kind, os.getpid())
    pool = _POOL.get(key)
    if pool is None:
        pool = _POOL[key] = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"ptxopt-{kind}")
    return pool


def _usable(hit: EvalResult, settings: Settings) -> bool:
    if hit.bad_input:  # a rejected original, cached by an older ptxopt: its lines may be another file's
        return False
    if hit.status != "timeout":
        return True
    limit = hit.timings.get("limit")
    return settings.timeout is not None and limit is not None and settings.timeout <= limit


def front(w: Work, cache: EvalCache | None) -> None:
    """Steps 1-4 of the module doc; leaves ``w.result`` set when the candidate is already final."""
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
        w.pkey = pipeline_key(cand.ptx, w.pipeline, cand.entry, launch_id(w.spec, w.geometry), s)
        if _hit(w, cache, cache.resolve(w.pkey) if cache else None):
            return
        w.finish("illegal", error=one_line(e))
        return
    w.pkey = pipeline_key(cand.ptx, w.pipeline, cand.entry, launch_id(w.spec, w.geometry), s)
    if cache is not None and _hit(w, cache, cache.resolve(w.pkey)):
        return
    try:
        orig = original(cand.ptx, cand.label)
    except ParseError as e:
        w.timings["pass"] = time.perf_counter() - t
        w.finish("parse", error=one_line(e))
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
        w.finish("internal", error=f"a pass crashed: {one_line(e)}", cacheable=False)
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
        w.finish("internal", error=f"printing the transformed module failed: {one_line(e)}", cacheable=False)
        return
    w.printed, w.module = printed, run.module
    w.changed = printed != orig.printed
    w.ptx_sha = sha256(printed)
    if w.spec is None and w.geometry is None:
        w.spec = _spec_for(orig, w.entry)
    w.key = module_key(printed, orig.printed, w.entry, launch_id(w.spec, w.geometry), s)
    w.timings["pass"] = time.perf_counter() - t
    if cache is not None:
        hit = cache.get(w.key)
        if hit is not None and _usable(hit, s):
            cache.alias(w.pkey, w.key)
            _hit(w, cache, hit)
            return

    # 4: ptxas in a helper thread (collected by _collect_compile), equivalence here
    from ptxopt.toolchain import compile_ptx

    w.ptxas_future = tools().submit(_timed, compile_ptx, printed, s.arch, timeout=s.timeout or DEFAULT_TIMEOUT)
    t = time.perf_counter()
    _verify(w, orig)  # a CandidateTimeout leaves ptxas to finish (or time out) on its own
    w.timings["verify"] = time.perf_counter() - t


def collect_compile(w: Work) -> None:
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
    hit = cache.resolve(pipeline_key(cand.ptx, pipeline, cand.entry, launch_id(cand.spec, cand.geometry), settings))
    if hit is None or not _usable(hit, settings):
        return None
    return hit.replace(cache_hit=True, kernel=cand.label, pipeline=pipeline)


def _hit(w: Work, cache, hit: EvalResult | None) -> bool:
    if hit is None or not _usable(hit, w.settings):
        return False
    w.result = hit.replace(cache_hit=True, kernel=w.cand.label, pipeline=w.pipeline)
    w.from_cache = True
    return True


def _spec_for(orig: Original, entry: str):
    from ptxopt.interp.errors import InterpError
    from ptxopt.verify import spec_for

    try:
        return spec_for(_program(orig), entry)
    except InterpError:
        return None


def _program(orig: Original):
    from ptxopt.interp import Program

    p = orig.programs.get("p")
    if p is None:
        p = orig.programs["p"] = Program(orig.module)
    return p


def _toolchain_failure(w: Work, e: BaseException) -> None:
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
                                       f"{one_line(e)}", cacheable=False)
        else:
            w.finish("ptxas", error=one_line(e))
    elif isinstance(e, ToolchainTimeout):
        w.timings["limit"] = w.settings.timeout or 0
        w.finish("timeout", error=one_line(e))
    elif isinstance(e, (UnsupportedPTXVersion, UnsupportedArch)):
        w.finish("unsupported", error=one_line(e))
    elif isinstance(e, ToolNotFound):
        w.finish("unsupported", error=one_line(e), cacheable=False)
    else:
        w.finish("internal", error=f"compiling failed: {type(e).__name__}: {one_line(e)}", cacheable=False)


def _original_rejected(w: Work) -> str | None:
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
            orig.rejected[arch] = one_line(e)
        except Exception:  # a timeout or a missing tool says nothing about the original
            return None
    return orig.rejected[arch]


def _launch_text(spec, geometry) -> str:
    if spec is not None:
        launch = spec.launch
        what = "manifest entry" if spec.path else "contract"  # a contract file's spec has no path
        return f"{what} {spec.id}: grid {tuple(launch.grid)}, block {tuple(launch.block)}"
    return f"grid {tuple(geometry.grid)}, block {tuple(geometry.block)}"


def _verify(w: Work, orig: Original) -> None:
    """Set the candidate's verdict (see :mod:`ptxopt.evaluate.result`,
    decided by :func:`ptxopt.evaluate.equivalence.decide`); a counterexample
    or a failure of the transformed kernel also finishes it."""
    from ptxopt.prove.hints import HINTS_ILL_FORMED, hints_only_legal

    from .equivalence import decide
    from .observable import observable_form

    spec, geometry = w.spec, w.geometry
    if w.changed and spec is None and geometry is None:
        geometry = DEFAULT_GEOMETRY
    launch = _launch_text(spec, geometry) if w.changed else None
    hints = w.changed and orig.observable() == observable_form(w.module)
    why = hints_only_legal(orig.module, w.module) if hints else None
    if why:  # only hints differ, and one is ill-formed: no run can show what it does
        w.equivalence, w.equivalence_note = "inconclusive", f"{HINTS_ILL_FORMED}: {why}"
        w.geometry, w.launch = geometry, launch
        return
    d = decide(changed=w.changed, same_observable=lambda: hints,
               original_program=lambda: _program(orig), module=w.module, entry=w.entry,
               reference_key=f"{sha256(orig.printed)}/{w.entry}/{launch_id(spec, geometry)}",
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



__all__ = ["original", "tools", "front", "collect_compile", "lookup"]
