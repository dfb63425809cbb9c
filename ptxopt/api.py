"""The library entry point: :func:`optimize` PTX text and say what was done.

Another compiler (Triton, an inductor backend, a hand-written build script)
hands ptxopt the PTX it was about to assemble and takes back either a
better PTX or its own, never a broken one::

    import ptxopt
    res = ptxopt.optimize(ptx, "vec_ld,maxnreg_128")
    use(res.ptx)                      # the result, or the input text when it was not safe
    print(res.verdict, res.reason)    # why (see below)

What :func:`optimize` does, in order:

1. parses the text and resolves the architecture (``arch``, else the
   module's ``.target``, :func:`ptxopt.toolchain.arch.resolve_arch`);
2. assembles the *input* with ptxas: a rejected input is bad input
   (:class:`~ptxopt.passes.passmanager.InputRejected`), no pass is blamed;
3. runs the pipeline (:class:`~ptxopt.passes.passmanager.PassManager`); the
   per-pass records say which sites changed and which were refused, and why;
4. assembles the result with the same ptxas: a rejection keeps the input;
5. establishes equivalence (:func:`check_equivalence`): ``identical`` (the
   printed module did not change), ``hints-only`` (it differs only in
   annotations the interpreter cannot observe: equal by construction),
   ``proved`` (the translation validator :mod:`ptxopt.equivalence.prove` showed every
   entry equivalent for all inputs; ``prove=False`` skips it), otherwise
   the interpreter under the launch contract (``equal``, ``inconclusive``,
   ``differ``); ``verify=False`` skips both and says ``unchecked``.

The result is used only when it assembled and its verdict is trusted
(``identical``, ``hints-only``, ``proved``, ``equal``, or ``unchecked`` when the
caller asked for no check) -- but a pipeline in which a pass that changes
control flow (``unroll``: :attr:`ptxopt.passes.base.Pass.structural`) changed
the module is used only when ``proved``; otherwise :attr:`OptimizeResult.ptx` is the
input text, byte for byte, and :attr:`OptimizeResult.reason` says why.
A pass that crashes is caught the same way (its reproducer path is in the
reason). Registers and spill bytes come from ptxas ``-v`` for the input
and for the returned text.

``compile`` lets a caller use its own ptxas (binary and flags) for steps 2
and 4: the Triton hook checks with exactly the ptxas Triton will run.

What each step's outcome means (a pass failure, ptxas's judgement of the
input and of the result, the acceptance rule, the estimate's keep/apply) is
decided in :mod:`ptxopt.evaluate.stages`, which the evaluator and ``ptxopt
run`` take it from too; the order, the helper threads and the budget are this
module's.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable, NamedTuple

from ptxopt.ptx.emit import emit
from ptxopt.support.host_state import library_call
from ptxopt.support.session_state import in_context
from ptxopt.ptx.ir import Module
from ptxopt.ptx.parser import parse
from ptxopt.passes.passmanager import InputRejected, PassManager, PassRecord, structural_changes
from ptxopt.passes.base import PassError
from ptxopt.passes.pipeline import Pipeline, PipelineError

from ptxopt.equivalence.verdict import ACCEPTED, Verdict


class BeforeAfter(NamedTuple):
    before: int | None
    after: int | None


@dataclass
class OptimizeResult:
    """What :func:`optimize` did. ``ptx`` is always safe to assemble: the
    transformed text when it was accepted, else the caller's own text."""

    ptx: str
    changed: bool  # ptx is not the input text
    pipeline: str
    arch: str
    records: list[PassRecord] = field(default_factory=list)
    verdict: Verdict = Verdict.IDENTICAL  # of the transformed module, see the module doc
    verdict_note: str = ""
    coverage: object | None = None  # ptxopt.equivalence.interpret.Coverage of the check, when the interpreter ran
    contract: str = ""  # the launch contract the check used
    registers: BeforeAfter = BeforeAfter(None, None)  # max over entries, input / returned text
    spills: BeforeAfter = BeforeAfter(None, None)  # spill store + load bytes, input / returned text
    reason: str = ""  # why the input text was kept ("" when the result was used or nothing changed)
    candidate: str | None = None  # the transformed text, also when it was not used
    ptxas: str = ""  # the ptxas that checked both (path, release)
    cubin: bytes | None = field(default=None, repr=False)  # ptxas's output for ``ptx``
    seconds: dict = field(default_factory=dict)
    #: the estimates of the input and the rewritten text under ``objective`` (None: not estimated)
    estimate: object | None = None  # ptxopt.evaluate.pair.PairEstimate
    warnings: list = field(default_factory=list)  # e.g. an explicit pipeline applied although estimated slower

    @property
    def objective(self) -> str | None:
        return getattr(self.estimate, "objective", None)

    @property
    def kept_original(self) -> bool:
        """A transformed module existed but was not used."""
        return bool(self.reason)

    @property
    def sites_changed(self) -> int:
        return sum(len(r.report.changed) for r in self.records if r.report)

    @property
    def sites_refused(self) -> int:
        return sum(len(r.report.refused) for r in self.records if r.report)

    def to_json(self) -> dict:
        return {
            "pipeline": self.pipeline, "arch": self.arch, "changed": self.changed,
            "verdict": self.verdict, "verdict_note": self.verdict_note or None,
            "coverage": None if self.coverage is None else round(float(self.coverage.output_bytes), 4),
            "contract": self.contract or None, "kept_original": self.kept_original,
            "reason": self.reason or None,
            "registers": {"before": self.registers.before, "after": self.registers.after},
            "spill_bytes": {"before": self.spills.before, "after": self.spills.after},
            "ptxas": self.ptxas,
            "estimate": self.estimate.to_json() if self.estimate is not None else None,
            "warnings": list(self.warnings),
            "passes": [{"pass": r.name, "changed": r.changed, "skipped": r.skipped or None,
                        "reverted": r.reverted or None, **({"report": r.report.to_json()} if r.report else {})}
                       for r in self.records],
            "seconds": {k: round(v, 6) for k, v in self.seconds.items()},
        }


Compile = Callable[[str, str], object]  # (ptx text, arch) -> ptxopt.toolchain.CompileResult


def _resources(res) -> tuple[int | None, int | None]:
    ks = list(res.kernels.values())
    if not ks:
        return None, None
    regs = [k.registers for k in ks if k.registers is not None]
    return (max(regs) if regs else None), sum(k.spill_store_bytes + k.spill_load_bytes for k in ks)


#: seconds :func:`optimize`'s passes may take by default (the evaluator's per-candidate limit)
PASS_TIMEOUT = 600.0


@library_call
def optimize(ptx: str, pipeline: str | Pipeline | None = None, *, policy=None, arch: str | None = None, contract=None,
             verify: bool = True, compile: Compile | None = None,
             filename: str = "<input>", prove: bool = True, objective: str | None = None,
             performance=None, if_slower: str = "keep", estimate: bool = True,
             parsed: Module | None = None, check_steps: int | None = None,
             overlap_compiles: bool = True, sass_store=None,
             min_improvement: float | None = None,
             timeout: float | None = PASS_TIMEOUT, budget_s: float | None = None) -> OptimizeResult:
    """Apply ``pipeline`` to ``ptx``; return the result only when ptxas
    accepts it and its equivalence is established (module doc).

    ``policy`` instead of ``pipeline``: a checkpoint of ``ptxopt train`` or a
    committed policy's name (as ``search --policy`` and
    ``ptxopt.triton.enable(policy=)`` take it), greedy-decoded from the
    kernel's features into the pipeline applied (needs the ``rl`` extra).

    ``contract``: how to launch the entries for the check -- a
    :class:`~ptxopt.equivalence.launch.Launch`, :class:`~ptxopt.equivalence.launch_contract.Contracts`,
    ``Geometry``, corpus ``KernelSpec``, or a list of alternatives tried in
    order while the verdict is ``inconclusive`` (the first under which the
    original runs fully decides; a ``differ`` under any is final). None: the
    corpus manifest entry when one matches, else a guessed one-thread launch.

    Speed (``estimate``, on by default): the input and the accepted result
    are estimated under ``objective`` (``latency`` or ``throughput``; None:
    throughput when a ``performance`` launch -- a
    :class:`~ptxopt.equivalence.launch.Launch` of role ``performance`` -- is
    given, else latency) with :func:`ptxopt.evaluate.pair.estimate_pair`. A
    result estimated slower is not used (``if_slower="keep"``: the input is
    returned and ``reason`` says by how much), or used with a warning
    (``if_slower="apply"``: the caller asked for exactly this pipeline).
    ``estimate`` is the comparison; every figure is the sim model's ESTIMATE.
    ``min_improvement`` (percent; None:
    :data:`~ptxopt.evaluate.pair.MIN_IMPROVEMENT_PCT`): with ``if_slower="keep"``, a
    result estimated faster by less is not used either (``reason``: "no change
    worth making"); with ``"apply"`` it is used with a warning.

    ``parsed``: the caller's own ``parse(ptx, filename)`` (not modified), so
    that the text is not parsed twice.

    ``overlap_compiles`` (with a caller's ``compile``): the input's ptxas run
    overlaps the passes and the result's, and the estimate reads the cubins
    of those two runs once the result is accepted; False: the runs one after
    the other and the estimate compiling both texts itself with ptxopt's own
    ptxas, overlapping them (the older, slower order; kept for comparisons).

    ``sass_store``: a :class:`~ptxopt.measure.sass_store.SassStore` the
    estimate of the caller's cubins reads SASS listings from and adds them to
    (the Triton hook's, kept between processes); None: this process's memo only.

    ``check_steps``: a budget of interpreter steps for the whole equivalence
    check (:mod:`ptxopt.equivalence.budget`; None: none). A check that spends
    it is ``inconclusive`` and the input is kept, the reason saying
    ``inconclusive (budget)``; nothing it did not run is claimed.

    ``budget_s``: seconds the whole call may take (None: no limit), the
    Triton hook's compile-time budget. It caps ``timeout`` and is checked
    between the stages (after the passes and ptxas, before the check, before
    the estimate): past it the input is kept at once (``reason``: "over the
    compile-time budget"). A stage already running finishes first: the
    interpreter check is bounded by ``check_steps``, ptxas by its own limit.

    ``timeout``: seconds the passes may take (None: no limit); passes that
    take longer are stopped and the input kept, ``inconclusive``. The limit
    is a ``SIGALRM`` timer, so it holds only when called from the main
    thread. What a pass prints is kept off stdout and becomes one of the
    result's ``warnings``. The caller's signal handlers, ``ITIMER_REAL``,
    ``sys.stdout``, GC state and environment are as they were on return
    (:mod:`ptxopt.support.host_state`).

    Raises :class:`~ptxopt.ptx.parser.ParseError` (the text does not parse),
    :class:`~ptxopt.passes.pipeline.PipelineError` (a bad pipeline string) and
    :class:`~ptxopt.passes.passmanager.InputRejected` (ptxas rejects the input):
    problems of the input, not of a rewrite; and a transient
    :class:`~ptxopt.toolchain.ToolchainError` (ptxas crashed, ran out of
    memory or hung: ``e.transient``), which says nothing about either."""
    from ptxopt.evaluate import stages
    from ptxopt.evaluate.stages import (budget_exceeded, estimate_decision, input_judged, judge_ptxas, over_budget,
                                        refusal, run_passes, same_code, unchecked_verdict)
    from ptxopt.toolchain import compile_ptx
    from ptxopt.toolchain.arch import resolve_arch

    from ptxopt.ptx.parser import expected_text

    if not isinstance(ptx, str):
        raise TypeError(expected_text("optimize()", ptx))
    if (pipeline is None) == (policy is None):
        raise TypeError("optimize() takes exactly one of a pipeline (e.g. 'vec_ld,maxnreg_128') and policy=")
    if policy is not None:
        pipeline = _policy_pipeline(ptx, policy, parsed, filename)
    if not isinstance(pipeline, (str, Pipeline)):
        raise TypeError(f"optimize() takes the pipeline as a str such as 'vec_ld,maxnreg_128' or a Pipeline, "
                        f"not {type(pipeline).__name__}")
    t0 = time.perf_counter()
    pipe = Pipeline.parse(pipeline) if isinstance(pipeline, str) else pipeline
    if performance is not None:  # a pass that uses the launch (launch_bounds) is bound to it, as the evaluator does
        from ptxopt.evaluate.candidate import bind_launch

        try:
            pipe = bind_launch(pipe, performance, performance.entry)
        except PassError as e:  # a block the launch does not have: the pipeline's error
            raise PipelineError(str(e)) from None
    module = parsed if parsed is not None else parse(ptx, filename)
    arch = resolve_arch(module, arch)
    run_ptxas = compile or compile_ptx
    seconds: dict[str, float] = {}

    def timed(key, fn, *a):
        t = time.perf_counter()
        try:
            return fn(*a)
        finally:
            seconds[key] = seconds.get(key, 0.0) + time.perf_counter() - t

    # the passes first: when they change the text, the estimate (which reads only the two texts)
    # starts at once in a helper thread and overlaps both ptxas runs and the equivalence check;
    # what is decided, and in which order failures are reported, is as before. With the caller's
    # own ptxas (``compile``), the input's run starts at once in a helper thread (overlapping the
    # passes and the result's run), and the estimate reads the two cubins they made, once the
    # result is accepted: the check is then short (hints, the prover) or it was the interpreter,
    # which a concurrent estimate slowed by a third (GIL and CPU; flash attention: 2.5 s instead of
    # 1.7 s) and whose rejections left the estimate's work unused.
    input_seconds = [0.0]  # the helper's own clock: ``seconds`` is only written by this thread

    def run_input():
        t = time.perf_counter()
        try:
            return run_ptxas(ptx, arch)
        finally:
            input_seconds[0] = time.perf_counter() - t

    input_run = _helper("input").submit(in_context(run_input)) if compile is not None and overlap_compiles else None
    capped = budget_s is not None and (timeout is None or budget_s <= timeout)
    if capped:
        timeout = budget_s
    passes = run_passes(lambda: timed("passes", PassManager(pipe).run, module), timeout=timeout, limited=True,
                        collect=True)
    run = passes.run
    if capped and passes.timed_out is not None:
        passes.timed_out = budget_exceeded(budget_s, passes.timed_out)
    printed_in = text = None
    pending = None
    if run is not None:
        printed_in, text = emit(module), emit(run.module)
        if estimate and text != printed_in and input_run is None:
            pending = _Pending(_estimate, ptx, text, module, arch, contract, objective, performance)
    early = None  # the result's run, made while the input's runs in its helper: (result, None) or (None, error)
    if input_run is not None and run is not None and text != printed_in:
        try:
            early = (timed("ptxas", run_ptxas, text, arch), None)
        except Exception as e:  # raised below, where the sequential code raised it (the input is judged first)
            early = (None, e)
    try:
        if input_run is not None:
            before = input_run.result()
            seconds["ptxas"] = seconds.get("ptxas", 0.0) + input_seconds[0]
        else:
            before = timed("ptxas", run_ptxas, ptx, arch)
    except Exception as e:
        if not input_judged(e):  # ptxas crashed or hung: not a verdict on the input (raised as it is)
            raise
        raise InputRejected.by_ptxas(arch, e) from None
    regs0, spill0 = _resources(before)
    out = OptimizeResult(ptx, False, str(pipe), arch, verdict=Verdict.IDENTICAL,
                         registers=BeforeAfter(regs0, regs0), spills=BeforeAfter(spill0, spill0),
                         ptxas=f"{before.ptxas_path} ({before.ptxas_version})", cubin=before.cubin,
                         seconds=seconds)
    out.warnings.extend(passes.printed)

    def keep_input(reason: str) -> OptimizeResult:
        out.reason = reason
        seconds["total"] = time.perf_counter() - t0
        return out

    kind = passes.kind
    if kind == stages.TIMEOUT:
        out.verdict = Verdict.INCONCLUSIVE
        return keep_input(passes.timed_out)
    if kind == stages.CRASHED:
        raise passes.error
    if kind == stages.FAILED:
        out.verdict = Verdict.INCONCLUSIVE
        return keep_input(f"a pass failed: {passes.error}")
    out.records = run.records
    if text == printed_in:
        seconds["total"] = time.perf_counter() - t0
        return out  # nothing changed: the caller's own text, byte for byte
    out.candidate = text
    try:
        if early is not None:
            after, err = early
            if err is not None:
                raise err
        else:
            after = timed("ptxas", run_ptxas, text, arch)
    except Exception as e:
        if judge_ptxas(e) in (stages.TRANSIENT, stages.BROKEN):  # the input was accepted above
            raise  # ptxas crashed or hung: not a verdict on the result
        out.verdict, out.verdict_note = Verdict.DIFFER, f"ptxas rejects the result: {e}"
        return keep_input(f"ptxas rejects the result for {arch}: {e}")

    late = over_budget(t0, budget_s, "the equivalence check")
    if late:
        out.verdict = Verdict.INCONCLUSIVE
        return keep_input(late)
    if verify:
        chk = timed("verify", check_equivalence, module, run.module, contract, prove, check_steps)
        out.verdict, out.verdict_note, out.coverage, out.contract = chk
    else:
        out.verdict, out.verdict_note = unchecked_verdict(module, run.module)
    refused = refusal(out.verdict, out.verdict_note, structural_changes(run))
    if refused:
        return keep_input(refused)
    if if_slower not in ("keep", "apply"):
        raise ValueError(f"if_slower must be 'keep' or 'apply', got {if_slower!r}")
    late = over_budget(t0, budget_s, "the estimate") if estimate else None
    if late:
        return keep_input(late)
    if estimate:
        if pending is None and same_code(before, after):  # nothing the estimate could rank: no nvdisasm run
            est = out.estimate = _same_speed(ptx, objective, performance)
        else:
            if pending is None:  # the caller's cubins, the ones that will run: one nvdisasm run for both
                pending = _Pending(_estimate_compiled, ptx, text, before, after, module, run.module, arch, contract,
                                   objective, performance, sass_store)
            est = out.estimate = timed("estimate_wait", pending.result)
            seconds["estimate"] = pending.seconds
        kept, warning = estimate_decision(est, if_slower, min_improvement)
        if kept:
            return keep_input(kept)
        if warning:
            out.warnings.append(warning)
    regs1, spill1 = _resources(after)
    out.ptx, out.changed, out.cubin = text, True, after.cubin
    out.registers, out.spills = BeforeAfter(regs0, regs1), BeforeAfter(spill0, spill1)
    seconds["total"] = time.perf_counter() - t0
    return out


def _helper(kind: str):
    from ptxopt.evaluate.prepare import tools

    return tools(kind)


class _Pending:
    """An estimate running in a helper thread: the estimate reads only the two
    texts (or their cubins), so it overlaps ptxas and the equivalence check
    instead of following them (the decision still waits for both; nothing is
    skipped)."""

    def __init__(self, fn, *args) -> None:
        self.seconds = 0.0
        self.future = _helper("estimate").submit(in_context(self._run, fn, *args))

    def _run(self, fn, *args):
        t = time.perf_counter()
        try:
            return fn(*args)
        finally:
            self.seconds = time.perf_counter() - t

    def result(self):
        return self.future.result()


def _estimate(ptx: str, text: str, module: Module, arch: str, contract, objective, performance):
    """:func:`ptxopt.evaluate.pair.estimate_pair` over every entry (cycles summed)."""
    from ptxopt.evaluate.pair import estimate_pair

    def one(fn, check):
        return estimate_pair(ptx, text, entry=fn.name, launch=check, performance=performance,
                             objective=objective, arch=arch, cache=None, parsed=module)

    return _per_entry(module, contract, objective, one)


def _per_entry(module: Module, contract, objective, one):
    """``one(entry, check launch)`` for every entry of ``module``, as one estimate."""
    from ptxopt.evaluate.pair import PairEstimate

    parts = []
    alternatives = _alternatives(contract, module) if isinstance(contract, (list, tuple)) else None
    for fn in module.entries:
        check = None
        if alternatives is not None:
            # alternatives (the Triton hook's): the first that fits the entry, the launch a search of a Triton
            # cache estimates under (its loop trip counts), so that tuning and applying rank alike
            check = next((alt for alt in alternatives(fn.name) if not isinstance(alt, Exception)), None)
        elif contract is not None:
            from ptxopt.equivalence.launch import as_launch

            check = contract.for_entry(fn.name) if hasattr(contract, "for_entry") else as_launch(contract)
        parts.append(one(fn, check))
    if not parts:
        return PairEstimate(objective or "latency", None, None, None, note="no entry to estimate")
    if any(p.change is None for p in parts):
        bad = next(p for p in parts if p.change is None)
        return bad
    if len(parts) == 1:
        return parts[0]
    return PairEstimate(parts[0].objective, "; ".join(filter(None, {p.launch for p in parts})) or None,
                        sum(p.before for p in parts), sum(p.after for p in parts), parts[0].estimate,
                        note=f"{len(parts)} entries, cycles summed")


def _estimate_compiled(ptx: str, text: str, before, after, module: Module, result: Module, arch: str, contract,
                       objective, performance, sass_store=None):
    """:func:`ptxopt.evaluate.pair.estimate_compiled` over every entry (cycles
    summed): the cubins the caller's ``compile`` made of the two texts; their
    SASS also read from and added to ``sass_store`` when one is given."""
    from ptxopt.evaluate.pair import estimate_compiled

    def one(fn, check):
        return estimate_compiled(ptx, text, before, after, entry=fn.name, launch=check, performance=performance,
                                 objective=objective, arch=arch, parsed=module, candidate_module=result)

    from ptxopt.measure.sass_store import stored

    with stored(sass_store):
        return _per_entry(module, contract, objective, one)


def _same_speed(ptx: str, objective, performance):
    """The estimate of a result whose cubin holds the input's code (:func:`ptxopt.evaluate.stages.same_code`):
    no cycles, not slower."""
    from ptxopt.evaluate.candidate import Candidate, objective_for
    from ptxopt.evaluate.pair import PairEstimate
    from ptxopt.evaluate.stages import SAME_CODE

    obj = objective_for(Candidate(ptx, "", performance=performance), objective)
    return PairEstimate(obj, None, None, None, note=SAME_CODE)


def _policy_pipeline(ptx: str, policy, parsed, filename: str) -> Pipeline:
    """The pipeline ``policy`` (a ranker or checkpoint, by path or committed name) picks for the first
    entry of ``ptx``; ValueError with one line when the policy cannot be loaded."""
    from ptxopt.search.policy_choice import policy_chooser

    try:
        chooser = policy_chooser(policy)
    except ImportError as e:
        raise ImportError(f"optimize(policy=) needs the learning layer (pip install 'ptxopt[rl]'): {e}") from None
    except Exception as e:  # the learning layer's CheckpointError: a file that is not a policy, an unknown name
        raise ValueError(f"optimize(policy={policy!r}): {e}") from None
    module = parsed if parsed is not None else parse(ptx, filename)
    name = module.entries[0].name if module.entries else filename
    pipe, _why = chooser.choose(name, ptx)
    return pipe if pipe is not None else Pipeline.parse("")


def _alternatives(contract, module: Module):
    """``entry -> [Launch, ...]``: the check launches to try for each entry
    (see :func:`optimize`'s ``contract``)."""
    from ptxopt.equivalence.launch_contract import Contracts
    from ptxopt.equivalence.launch_contract import check_launch
    from ptxopt.equivalence.launch import as_launch

    given = list(contract) if isinstance(contract, (list, tuple)) else [contract]

    def launches(entry: str) -> list:
        out = []
        for alt in given or [None]:
            try:
                cs = alt if isinstance(alt, Contracts) else Contracts([as_launch(alt)] if alt is not None else [])
                out.append(check_launch(module, entry, cs))
            except InputRejected as e:  # a contract that does not fit this entry decides nothing
                out.append(e)
        return out

    return launches


def check_equivalence(original: Module, transformed: Module, contract=None,
                      prove: bool = True, steps: int | None = None) -> tuple[Verdict, str, object, str]:
    """``(verdict, note, coverage, launch)`` for ``transformed`` against
    ``original``: the one verification step of :func:`optimize`, decided by
    :func:`ptxopt.equivalence.decide_module` (each entry: hints-only, proved
    when ``prove``, else the interpreter under its check launch with the
    command line's minimum coverage; the module's verdict is the weakest
    entry's). ``contract`` may list alternatives (see :func:`optimize`);
    ``steps`` bounds the interpreter's work in the whole check
    (:mod:`ptxopt.equivalence.budget`)."""
    from ptxopt.equivalence.decision import decide_module
    from ptxopt.equivalence.interpret import DEFAULT_MIN_COVERAGE

    d = decide_module(original, transformed, _alternatives(contract, original), prove=prove,
                      min_coverage=DEFAULT_MIN_COVERAGE, budget=steps)
    cov = d.result.coverage if d.result is not None else None
    where = d.launch.describe() if d.launch is not None else "all launches" if d.verdict is Verdict.PROVED else ""
    return d.verdict, d.note, cov, where


def optimize_text(ptx: str, pipeline: str | Pipeline, **kw) -> str:
    """Just the text of :func:`optimize`."""
    return optimize(ptx, pipeline, **kw).ptx


__all__ = ["optimize", "OptimizeResult", "BeforeAfter", "check_equivalence", "ACCEPTED", "optimize_text"]

