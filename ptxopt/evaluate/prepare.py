"""Preparing a candidate, the first half of an evaluation: from (kernel, pipeline) to printed, compiled,
checked PTX.

Per candidate, in order:

1. the *pipeline key* of the candidate's canonical pipeline is looked up
   (the Candidate parsed it when it was built: ``illegal`` if it names an
   unknown pass or conflicting passes);
2. the original PTX is parsed (``parse``; parsed modules are memoised per
   evaluation session, :mod:`ptxopt.evaluate.session`, so the candidates of
   one kernel parse it once). A candidate that carries its module (a search
   state's child, :meth:`~ptxopt.evaluate.candidate.Candidate.with_built`:
   the action mask already applied its passes) is measured as it is;
   otherwise the passes run through
   :class:`~ptxopt.passes.passmanager.PassManager` (``illegal`` when a pass
   refuses the module as a whole, ``internal`` when a pass crashes), from
   the module of the longest prefix of the pipeline already evaluated on
   this original (:mod:`ptxopt.evaluate.prefix`: ``P+[p]`` runs ``p`` alone);
3. the result is printed and the *result key* looked up: a pipeline that
   changed nothing prints the original's text and hits the cache;
4. ptxas compiles the printed PTX (in a helper thread) while the interpreter
   checks equivalence with the original in this one (what
   :func:`ptxopt.equivalence.interpret.verify` does, with the original's outputs remembered
   across candidates: :mod:`ptxopt.equivalence.decision`; skipped as
   ``identical`` when the text is the original's own printing, and as
   ``hints-only`` when it differs only in annotations the interpreter cannot
   observe: :mod:`ptxopt.equivalence.observable`).

It ends where the backend begins: :mod:`ptxopt.evaluate.batch` collects the
ptxas runs, measures and commits.  :func:`lookup` answers a request from the
cache by its pipeline key alone, without parsing anything.

Launch for the equivalence check (and the sim's loop profile): the
candidate's own (``launch``, from a contract or options), else its corpus
manifest entry's (``spec``), else the manifest entry whose kernel name and
parameter names match (:func:`ptxopt.equivalence.interpret.spec_for`), else a
launch *inferred* from the PTX (:func:`ptxopt.equivalence.infer.infer_launch`:
its ``.reqntid`` or a warp-sized block within ``.maxntid``, two blocks, 64
KiB buffers), on which the interpreter says ``equal`` only with full output
and changed-instruction coverage. When the
*original* cannot be run that way (it faults, uses an instruction the
interpreter lacks, needs a scalar it cannot guess) the result records
``equivalence="inconclusive"`` with the reason and goes on: its cycles are
measured, but a search never takes it as its best (see
:attr:`EvalResult.checked`). The verdicts are
:class:`ptxopt.equivalence.Verdict`.

When ptxas rejects a candidate, the original is compiled too: if ptxas
rejects the original as well, the result is marked ``bad_input`` and says
so, instead of blaming the pipeline. What a pass failure and a ptxas
failure mean is decided in :mod:`ptxopt.evaluate.stages`, with
:func:`ptxopt.optimize` and ``ptxopt run``; the statuses are this module's.
"""

from __future__ import annotations

import os
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from ptxopt.equivalence.decision import Reference
from ptxopt.equivalence.infer import infer_launch
from ptxopt.equivalence.launch import from_spec
from ptxopt.support.bounded_memo import BoundedMemo
from ptxopt.support.session_state import Slot, in_context

from ptxopt.evaluate import stages
from ptxopt.evaluate.cache import EvalCache
from ptxopt.evaluate.candidate import (DEFAULT_TIMEOUT, Candidate, Settings, bind_launch, entry_of, performance_for,
                                       settings_for)
from ptxopt.evaluate.keys import given_launch, keyed_text, launch_id, module_key, request_key, sha256
from ptxopt.evaluate.prefix import PrefixMemo, run_pipeline
from ptxopt.evaluate.result import EvalResult
from ptxopt.evaluate.stages import blame, judge_ptxas, run_passes
from ptxopt.evaluate.work import Work, one_line

_MEMO_SIZE = 16
#: (sha256(original text), ptxas environment) -> Original, per evaluation session (:mod:`ptxopt.evaluate.session`)
_MEMO = Slot("evaluate.frontend.originals", lambda: BoundedMemo(lambda: _MEMO_SIZE))
#: start each candidate's passes from its longest evaluated prefix (:mod:`ptxopt.evaluate.prefix`);
#: False: from the original every time (the tests compare both)
PREFIXES = True
#: measure the module a candidate carries (a search state's child: :meth:`Candidate.with_built`) as it is;
#: False: apply its passes again (the tests compare both)
HAND_OVER = True
_POOL: dict[tuple[str, int], ThreadPoolExecutor] = {}


@dataclass
class Original(Reference):
    """One original kernel as every candidate of it is checked against it
    (:class:`~ptxopt.equivalence.decision.Reference`: printing, observable
    form, interpreter program and runs computed once)."""

    rejected: dict = field(default_factory=dict)  # arch -> ptxas's error for the original text (None: accepted)
    compiled: dict = field(default_factory=dict)  # arch -> ptxas's CompileResult of the original text
    #: the module after each pipeline evaluated on this original (:mod:`ptxopt.evaluate.prefix`)
    prefixes: PrefixMemo = field(default_factory=PrefixMemo, repr=False)


def original(text: str, name: str, parsed=None) -> Original:
    """The original ``text`` parsed (remembered by its digest); ``parsed``: the
    caller's own ``parse(text)``, used instead of parsing again."""
    from ptxopt.ptx.emit import emit
    from ptxopt.ptx.parser import parse
    from ptxopt.toolchain.ptxas import environment_key

    h = sha256(text)
    memo = (h, environment_key())  # its compiles are the default ptxas's: another one, another entry
    originals = _MEMO.get()
    o = originals.lookup(memo)
    if o is not None:
        return o
    m = parsed if parsed is not None else parse(text, name)
    o = Original(m, h, emit(m))
    originals.remember(memo, o)
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
    from ptxopt.ptx.emit import emit
    from ptxopt.ptx.parser import ParseError
    from ptxopt.passes.base import PassError
    from ptxopt.passes.passmanager import structural_changes

    s, cand = w.settings, w.cand
    t = time.perf_counter()
    w.spec = cand.spec
    given = given_launch(cand)
    w.performance = performance_for(cand)
    if cache is not None and _hit(w, cache, cache.resolve(w.pipeline_key())):
        return
    if cand.pipeline_error is not None:  # found when the candidate was built
        w.finish("illegal", error=one_line(cand.pipeline_error))
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
    w.entry = entry_of(cand, m)
    if w.entry not in entries:
        w.timings["pass"] = time.perf_counter() - t
        w.finish("unsupported", error=f"no .entry named {w.entry}" if w.entry else "the module has no .entry")
        return
    try:  # a pass that depends on the launch (launch_bounds) takes the performance launch's block
        pipeline = bind_launch(cand.parsed, w.performance, w.entry)
    except PassError as e:
        w.timings["pass"] = time.perf_counter() - t
        w.finish("illegal", error=one_line(e))
        return
    # the module the caller built (a search state's child), else from the longest evaluated prefix; the
    # candidate's time limit is the batch's (a timeout goes through to it)
    passes = run_passes(lambda: run_pipeline(orig.prefixes if PREFIXES else None, m, pipeline,
                                             cand.built if HAND_OVER else None))
    kind = passes.kind
    if kind in (stages.FAILED, stages.CRASHED):
        w.timings["pass"] = time.perf_counter() - t
        w.finish("internal", error=f"a pass crashed: {one_line(passes.error)}", cacheable=False)
        return
    if kind == stages.REFUSED:
        w.timings["pass"] = time.perf_counter() - t
        w.finish("illegal", error=passes.refusal())
        return
    run = passes.run
    try:
        printed = emit(run.module)
    except Exception as e:
        w.timings["pass"] = time.perf_counter() - t
        w.finish("internal", error=f"printing the transformed module failed: {one_line(e)}", cacheable=False)
        return
    w.printed, w.module = printed, run.module
    w.structural = structural_changes(run)
    w.changed = printed != orig.printed
    w.ptx_sha = sha256(printed)
    if given is None:
        w.spec = _spec_for(orig, w.entry)
    w.check = given or (from_spec(w.spec) if w.spec is not None else
                        infer_launch(next(f for f in orig.module.entries if f.name == w.entry), orig.module))
    w.key = module_key(printed, keyed_text(orig.printed, cand), w.entry, launch_id(w.check, w.performance), s)
    w.timings["pass"] = time.perf_counter() - t
    if cache is not None:
        hit = cache.get(w.key)
        if hit is not None and _usable(hit, s):
            cache.alias(w.pipeline_key(), w.key)
            _hit(w, cache, hit)
            return

    # 4: ptxas in a helper thread (collected by _collect_compile), equivalence here
    from ptxopt.toolchain import compile_ptx

    w.ptxas_future = tools().submit(in_context(_timed, compile_ptx, printed, s.arch,
                                               timeout=s.timeout or DEFAULT_TIMEOUT))  # the caller's session
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
    settings = settings_for(cand, settings)
    hit = cache.resolve(request_key(cand, settings))
    if hit is None or not _usable(hit, settings):
        return None
    return hit.replace(cache_hit=True, kernel=cand.label, pipeline=cand.pipeline)


def _hit(w: Work, cache, hit: EvalResult | None) -> bool:
    if hit is None or not _usable(hit, w.settings):
        return False
    w.result = hit.replace(cache_hit=True, kernel=w.cand.label, pipeline=w.pipeline)
    w.from_cache = True
    return True


def _spec_for(orig: Original, entry: str):
    from ptxopt.interp.errors import InterpError
    from ptxopt.equivalence.interpret import spec_for

    try:
        return spec_for(orig.program, entry)
    except InterpError:
        return None


def _toolchain_failure(w: Work, e: BaseException) -> None:
    """The candidate's status for ptxas's failure on its text, as :func:`ptxopt.evaluate.stages.blame` judges it."""
    kind = blame(e, lambda: _original_rejected(w), w.changed)
    if kind == stages.TRANSIENT:  # a crash, out of memory, a hang: the tool's, not the candidate's nor the input's
        w.finish("toolchain", error=one_line(e), cacheable=False)
    elif kind == stages.BAD_INPUT:
        # not cached: the message quotes the lines of the user's file, and every file that prints
        # the same (blank lines, comments) shares this result's key
        w.bad_input = True
        w.finish("ptxas", error=f"ptxas rejects the original kernel for {w.settings.arch} (bad input, not the "
                                f"pipeline's doing; give the arch it was written for with --arch): "
                                f"{_original_rejected(w)}", cacheable=False)
    elif kind == stages.REPRINT:
        w.finish("internal", error=f"ptxas accepts the original but not its reprinting (a printer bug): "
                                   f"{one_line(e)}", cacheable=False)
    elif kind == stages.REJECTED:
        w.finish("ptxas", error=one_line(e))
    elif kind == stages.UNSUPPORTED:
        w.finish("unsupported", error=one_line(e))
    elif kind == stages.MISSING:
        w.finish("unsupported", error=one_line(e), cacheable=False)
    else:
        w.finish("internal", error=f"compiling failed: {type(e).__name__}: {one_line(e)}", cacheable=False)


def _original_rejected(w: Work) -> str | None:
    """ptxas's error for the candidate's original text (as given) on the
    candidate's arch, None when ptxas accepts it; memoised per original."""
    from ptxopt.toolchain import compile_ptx

    orig, arch = w.orig, w.settings.arch
    if orig is None:
        return None
    if arch not in orig.rejected:
        try:
            orig.compiled[arch] = compile_ptx(w.cand.ptx, arch, timeout=w.settings.timeout or DEFAULT_TIMEOUT)
            orig.rejected[arch] = None
        except Exception as e:
            if judge_ptxas(e) != stages.REJECTED:  # a timeout or a missing tool says nothing about the original
                return None
            orig.rejected[arch] = one_line(e)
    return orig.rejected[arch]


def assumed_blocks(w: Work) -> int | None:
    """Grid blocks for a throughput estimate whose performance launch has no
    grid: enough for :data:`ptxopt.sim.throughput.ASSUMED_WAVES` full waves
    at the ORIGINAL kernel's occupancy, the same for every candidate of it
    (a register budget changes how fast the work runs, not the work). None:
    no assumption needed, or the original cannot be compiled."""
    perf = w.performance
    if w.settings.objective != "throughput" or (perf is not None and perf.grid is not None):
        return None
    block = perf.block if perf is not None else w.check.block
    if _original_rejected(w) is not None or w.settings.arch not in w.orig.compiled:
        return None
    from ptxopt.sim.device import device_for
    from ptxopt.sim.throughput import KernelFacts
    from ptxopt.sim.throughput import assumed_blocks as waves_of

    k = w.orig.compiled[w.settings.arch].kernels.get(w.entry)
    if k is None or not k.registers:
        return None
    facts = KernelFacts(0.0, 0, registers=k.registers, shared_bytes=k.shared_bytes or 0)
    return waves_of(facts, (None, block, perf.shared_bytes if perf is not None else w.check.shared_bytes),
                    device_for(w.settings.arch))


def _verify(w: Work, orig: Original) -> None:
    """Set the candidate's verdict (see :mod:`ptxopt.evaluate.result`,
    decided by :func:`ptxopt.equivalence.decision`); a counterexample or a
    failure of the transformed kernel also finishes it."""
    from ptxopt.equivalence import Verdict, decide
    from ptxopt.equivalence.verdict import ACCEPTED
    from ptxopt.evaluate.stages import refusal

    s = w.settings
    d = decide(orig, w.module, w.entry, w.check, prove=s.prove, trials=s.trials, min_coverage=s.min_coverage,
               changed=w.changed)
    w.equivalence, w.equivalence_note = d.verdict.value, d.note or None
    if d.verdict in (Verdict.IDENTICAL, Verdict.HINTS_ONLY):
        return
    why = refusal(d.verdict, d.note or "", w.structural) if d.verdict in ACCEPTED else None
    if why is not None:  # a control-flow rewrite short of a proof: measured, never a search's best
        w.equivalence, w.equivalence_note = Verdict.INCONCLUSIVE.value, why
    w.launch = w.check.describe()
    if d.coverage is not None:
        w.coverage = d.coverage
    if d.finish is not None:
        if d.finish == "timeout":
            w.timings["limit"] = s.timeout or 0
        w.finish(d.finish, error=d.error)


__all__ = ["original", "tools", "front", "collect_compile", "lookup", "assumed_blocks"]
