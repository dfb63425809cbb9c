"""Run every kernel Triton compiles through ptxopt, via Triton's stage hook.

Triton (3.9) calls ``knobs.runtime.add_stages_inspection_hook`` in two
ways, whatever its declared ``PipelineStagesHook`` protocol says:

* with **no arguments**, from ``triton.compiler.compile``, expecting
  ``(key, hash)``: ``key`` is appended to the kernel's cache key -- ours
  names the ptxopt version and a digest of its pass code, the pipeline
  source (the pipeline string, the results file's digest or the policy
  checkpoint's) and ``verify``, so changing any of them recompiles;
* with ``(backend, stages, options, language, capability)``, from the
  backend's ``add_stages``, to edit the stage table: we wrap the ``ptx``
  stage (its output goes through :func:`ptxopt.optimize` before the
  ``cubin`` stage assembles it), read the signature off the first stage's
  input (:mod:`ptxopt.triton.signature`) and time every stage.

Cost: the text handed to the ``cubin`` stage was already assembled
by ptxopt with Triton's own ptxas command, so that stage is handed ptxopt's
cubin (byte-identical, :func:`reusable_cubin`) instead of running ptxas again;
the equivalence check has a step budget (:data:`HOOK_CHECK_STEPS`); the
estimate reads the two cubins the hook's ptxas runs made, is skipped when
the result's cubin holds Triton's machine code (:mod:`ptxopt.measure.same_code`:
e.g. ``.maxnreg`` above what the kernel uses -- the same speed, nothing to
rank), and takes SASS listings seen by an earlier process from a store on
disk (:mod:`ptxopt.measure.sass_store`, ``enable(disk_cache=...)``) instead
of running nvdisasm (~0.2 s of CPU per run whatever the cubin) again; a check
that did not accept a rewrite is remembered on disk too, by everything it
depended on (:mod:`ptxopt.triton.rejections`), so a later compile of the same
kernel keeps Triton's PTX at once.

Per kernel: the pipeline comes from the chooser (:mod:`ptxopt.triton.choose`),
the launch contract from Triton's metadata (:mod:`ptxopt.triton.contract_from_triton`),
the architecture from the PTX's ``.target``, and ptxas is Triton's own
binary and flags (:mod:`ptxopt.triton.triton_ptxas`). On any failure -- ptxas
rejects the result, equivalence is not established, a pass or ptxopt
itself raises -- Triton's own PTX goes on to the ``cubin`` stage unchanged
and one :class:`PtxoptTritonWarning` says why. :func:`report` lists what
happened to each kernel; the kernel's cache metadata (``NAME.json``) also
gets a ``ptxopt`` entry.

The JIT (``JITFunction.run``) also asks the hook for its key on every
launch and adds its hash to the in-memory kernel key, so after
:func:`enable` (or a change of pipeline) a ``@triton.jit`` kernel is
compiled again at its next launch -- through the hook -- and after
:func:`disable` the plain kernel is found again in both caches. A kernel
compiled with ``triton.compile`` directly is looked up only on disk, under
the key above.
"""

from __future__ import annotations

import hashlib
import threading
import time
import warnings
from dataclasses import dataclass, field
from functools import lru_cache

from ptxopt.equivalence.verdict import Verdict
from ptxopt.support.host_state import library_call

from ptxopt.api import BeforeAfter


#: The hook's default budget for one kernel's equivalence check, in interpreter
#: steps over every launch and contract alternative (:mod:`ptxopt.equivalence.budget`).
#: At most ~1-3.5 s of interpretation on this 2-core machine at 128 threads (a
#: warp-wide step costs 0.1-0.35 ms, a thread-serial one ~0.05 ms), usually far
#: less: a check whose first compared launch shows it cannot fit stops there.
#: Without it a check that ended ``inconclusive`` anyway cost 4 s (matmul_f32_ieee)
#: to 55 s (flash_attn_fwd) against 0.3-0.9 s for Triton's whole compile. A
#: thorough check of a 128-thread kernel that synchronises needs ~300 steps per
#: lockstep step of the kernel (its thread-serial launch runs every thread on its
#: own), so such kernels are kept ``inconclusive (budget)`` unless the prover (not
#: limited by it, tried first) decides them; on the corpus's Triton kernels, under
#: five pipelines, no rewrite needed the interpreter to be accepted.
#: ``enable(check_steps=None)`` removes the budget, a larger number raises it.
HOOK_CHECK_STEPS = 10_000

#: The hook's default time limit, in seconds, for the passes of one kernel
#: (``enable(timeout=...)``; a ``SIGALRM`` timer: it holds when Triton compiles
#: on the main thread). Passes that take longer keep Triton's PTX.
HOOK_PASS_TIMEOUT = 60.0


class PtxoptTritonWarning(UserWarning):
    """ptxopt kept Triton's own PTX for a kernel; the message says why."""


@dataclass
class KernelReport:
    """What the hook did to one kernel."""

    name: str
    source_hash: str  # of Triton's PTX (the key of a pipelines file)
    arch: str = ""
    pipeline: str = ""  # applied ("" when none was chosen)
    why_pipeline: str = ""  # where the pipeline came from, or why there was none
    changed: bool = False  # the cubin is built from ptxopt's PTX
    verdict: str = ""
    verdict_note: str = ""
    reason: str = ""  # why Triton's PTX was kept ("" when used or no pipeline)
    contract: str = ""
    coverage: float | None = None
    registers: BeforeAfter = BeforeAfter(None, None)
    spills: BeforeAfter = BeforeAfter(None, None)
    passes: list = field(default_factory=list)  # [{"pass", "changed", "refused": [reasons]}]
    ptxopt_seconds: float = 0.0
    triton_seconds: float = 0.0  # Triton's own stage functions (ptxopt's time excluded)
    ptx: str = field(default="", repr=False)  # the PTX handed to the cubin stage
    objective: str = ""  # what the estimates are (latency or throughput)
    launch: str = ""  # the performance launch they are for (Triton's block and shared memory; grid assumed)
    estimate: BeforeAfter = BeforeAfter(None, None)  # cycles, Triton's PTX / the result (ESTIMATES)
    estimate_note: str = ""  # why there are no cycles (e.g. the result's cubin holds Triton's machine code)
    warnings: list = field(default_factory=list)
    #: optimize()'s own timings: passes, ptxas (both), verify, estimate (its helper thread), estimate_wait, total
    stage_seconds: dict = field(default_factory=dict)
    #: Triton's ``cubin`` stage was handed the cubin of ptxopt's own ptxas run (:func:`reusable_cubin`)
    cubin_reused: bool = False
    #: the outcome is a rejected check remembered from an earlier compile (:mod:`ptxopt.triton.rejections`):
    #: nothing was rewritten, compiled or checked this time
    rejection_remembered: bool = False

    @property
    def overhead(self) -> float | None:
        """ptxopt's added compile time as a fraction of Triton's own."""
        return self.ptxopt_seconds / self.triton_seconds if self.triton_seconds else None

    def line(self) -> str:
        if not self.pipeline:
            return f"{self.name}: untouched ({self.why_pipeline})"
        what = "rewritten" if self.changed else ("kept Triton's PTX: " + self.reason if self.reason
                                                 else "nothing to change")
        parts = [f"{self.name}: [{self.pipeline}] {what}"]
        if self.verdict:
            parts.append(f"verdict {self.verdict}")
        parts.append(before_after("registers", self.registers))
        if self.estimate.before is not None:
            parts.append(before_after(f"{self.objective} estimate", self.estimate, unit=" cycles") + " (ESTIMATE)")
        elif self.changed and self.estimate_note:
            parts.append(f"{self.objective} estimate: none ({self.estimate_note.split(':')[0]})")
        return "; ".join(p for p in parts + self.idle_passes + [self.cost] if p)

    @property
    def cost(self) -> str:
        """What this kernel's pass through ptxopt added to its compile, in words."""
        if not self.ptxopt_seconds:
            return ""
        ratio = self.overhead
        return f"ptxopt added {self.ptxopt_seconds:.2f} s" + (f" ({ratio:.1f}x Triton's own compile)"
                                                              if ratio is not None else "")

    @property
    def idle_passes(self) -> list[str]:
        """``PASS: why`` for each pass that changed nothing: its first refusal
        (and how many more), or its note (the vectorizers' census)."""
        out = []
        for p in self.passes:
            if p.get("changed"):
                continue
            if p.get("refused"):
                more = len(p["refused"]) - 1
                out.append(f"{p['pass']}: {p['refused'][0]}" + (f" (+{more} more)" if more else ""))
            elif p.get("note"):
                out.append(f"{p['pass']}: {p['note']}")
        return out

    def to_json(self) -> dict:
        return {"name": self.name, "source_hash": self.source_hash, "arch": self.arch,
                "pipeline": self.pipeline, "why_pipeline": self.why_pipeline, "changed": self.changed,
                "verdict": self.verdict or None, "verdict_note": self.verdict_note or None,
                "reason": self.reason or None, "contract": self.contract or None, "coverage": self.coverage,
                "registers": list(self.registers), "spill_bytes": list(self.spills), "passes": self.passes,
                "ptxopt_seconds": round(self.ptxopt_seconds, 6),
                "triton_seconds": round(self.triton_seconds, 6), "cubin_reused": self.cubin_reused,
                "estimate_note": self.estimate_note or None, "rejection_remembered": self.rejection_remembered,
                "stage_seconds": {k: round(v, 6) for k, v in self.stage_seconds.items()}}


def before_after(what: str, v: BeforeAfter, unit: str = "") -> str:
    """``registers 20->24``, ``registers 20 (unchanged)``, ``registers 20 (after: not known)``,
    or ``""`` when neither side is known (a report never says ``None->None``)."""
    b, a = v.before, v.after
    fmt = (lambda x: f"{x:g}") if any(isinstance(x, float) for x in (b, a)) else str
    if b is None and a is None:
        return ""
    if a is None:
        return f"{what} {fmt(b)}{unit} (after: not known)"
    if b is None:
        return f"{what} {fmt(a)}{unit} (before: not known)"
    if b == a:
        return f"{what} {fmt(b)}{unit} (unchanged)"
    return f"{what} {fmt(b)}->{fmt(a)}{unit}"


@lru_cache(maxsize=1)
def code_digest() -> str:
    """ptxopt's version and a digest of the code that decides a rewrite: what
    prints the PTX and what verifies it (the evaluator's own digests), and
    this integration with :func:`ptxopt.optimize`."""
    import ptxopt
    from ptxopt.passes.registry import code_digests
    from ptxopt.support.digests import source_digest

    d = code_digests()
    h = hashlib.sha256(f"{d['front']}\0{d['evaluator']}\0{source_digest('triton', 'api.py')}".encode())
    return f"{ptxopt.__version__}-{h.hexdigest()[:16]}"


def _summarise(records, module=None) -> list[dict]:
    """Per pass: sites changed, refusals (reasons), and for a vectorizer that
    neither changed nor refused anything a ``note`` saying why (what the
    kernel's global accesses are: Triton usually emits ``.v4`` already, or
    scalars under per-element guards)."""
    from ptxopt.passes.vectorize import census

    out = []
    for r in records:
        rep = r.report
        row = {"pass": r.name, "changed": len(rep.changed) if rep else 0,
               "refused": [str(s.what) for s in rep.refused] if rep else [],
               "skipped": r.skipped or None}
        if module is not None and rep is not None and not rep.changed and not rep.refused \
                and r.name in ("vec_ld", "vec_st"):
            row["note"] = census(module, store=r.name == "vec_st")
        out.append(row)
    return out


class StagesHook:
    """The callable installed as ``knobs.runtime.add_stages_inspection_hook``."""

    def __init__(self, chooser, *, verify: bool = True, contracts: dict | None = None,
                 objective: str | None = None, if_slower: str = "keep",
                 check_steps: int | None = HOOK_CHECK_STEPS, estimate: bool = True, disk_cache=True,
                 min_improvement: float | None = None, timeout: float | None = HOOK_PASS_TIMEOUT,
                 budget_s: float | None = None):
        from ptxopt.measure.sass_store import SassStore
        from ptxopt.triton.rejections import RejectionMemo

        self.chooser = chooser
        root = _disk_root(disk_cache)
        #: SASS listings kept between processes (:mod:`ptxopt.measure.sass_store`); None: none
        self.sass_store = SassStore(root / "sass") if root is not None and estimate else None
        #: checks that did not accept a rewrite, kept between processes (:mod:`ptxopt.triton.rejections`)
        self.rejections = RejectionMemo(root / "rejected") if root is not None and verify else None
        self.check_steps = check_steps
        self.timeout = timeout
        self.budget_s = budget_s
        self.estimate = estimate
        self.objective = objective
        self.if_slower = if_slower
        self.min_improvement = min_improvement
        self.verify = verify
        self.contracts = dict(contracts or {})
        self.key = (f"ptxopt-{code_digest()}-{chooser.key}-verify={int(verify)}-objective={objective}"
                    f"-if_slower={if_slower}-check_steps={check_steps}" + ("" if estimate else "-estimate=0")
                    + ("" if min_improvement is None else f"-min_improvement={min_improvement:g}")
                    + ("" if budget_s is None else f"-budget_s={budget_s:g}"))
        self.hash = hashlib.sha256(self.key.encode()).hexdigest()  # asked on every JIT launch
        self.reports: list[KernelReport] = []
        self._lock = threading.Lock()
        #: hand Triton's ``cubin`` stage the cubin ptxopt's own ptxas run made of the same text
        #: (:func:`reusable_cubin`) instead of assembling it again; False: Triton's stage always runs
        self.reuse_cubin = True
        #: optimize(overlap_compiles=...): the input's ptxas run in parallel, the estimate from the hook's cubins
        self.overlap_compiles = True

    def __call__(self, *args):
        if not args:  # compile() asks for the cache key
            return self.key, self.hash
        # (backend, stages, options, language, capability) in 3.9; only the
        # first three are used, so a Triton that passes fewer/more still works
        try:
            backend, stages, options = args[0], args[1], args[2]
            self.install(backend, stages, options)
        except Exception as e:  # never break Triton's compile: leave its stages alone
            warnings.warn(f"ptxopt: could not install its stage (Triton's stages kept): "
                          f"{type(e).__name__}: {_one_line(e)}", PtxoptTritonWarning, stacklevel=2)
        return None

    # -- the stage table ----------------------------------------------------
    def install(self, backend, stages: dict, options) -> None:
        if not isinstance(stages, dict) or "ptx" not in stages:
            return  # not an NVIDIA pipeline: nothing for ptxopt to do
        box: dict = {"triton": 0.0, "args": None, "report": None}
        names = list(stages)
        for i, ext in enumerate(names):
            stages[ext] = self._wrap(ext, stages[ext], box, first=i == 0, backend=backend, options=options)

    def _wrap(self, ext, fn, box, *, first: bool, backend, options):
        def stage(src, metadata):
            if first:
                box["args"] = _signature_of(src)
            if ext == "cubin" and self.reuse_cubin:
                cubin = reusable_cubin(box.pop("cubin", None), src, backend, options)
                if cubin is not None:  # ptxas already ran on this text, Triton's binary and flags
                    if box["report"] is not None:
                        box["report"].cubin_reused = True
                    return cubin
            t = time.perf_counter()
            out = fn(src, metadata)
            box["triton"] += time.perf_counter() - t
            if ext == "ptx":
                out = self.rewrite(out, metadata, box, backend, options)
            if box["report"] is not None:
                box["report"].triton_seconds = box["triton"]
            return out

        stage.__wrapped__ = fn  # type: ignore[attr-defined]
        return stage

    # -- one kernel ---------------------------------------------------------
    @library_call
    def rewrite(self, ptx: str, metadata: dict, box: dict, backend, options) -> str:
        from ptxopt.triton.pipelines import source_hash

        t0 = time.perf_counter()
        name = str(metadata.get("name") or "?")
        rep = KernelReport(name, source_hash(ptx), ptx=ptx)
        box["report"] = rep
        out = ptx
        try:
            out = self._optimize(ptx, name, metadata, box, backend, options, rep)
        except Exception as e:  # ptxopt must never break Triton's compile
            rep.reason = f"ptxopt failed: {type(e).__name__}: {_one_line(e)}"
            rep.changed, out = False, ptx
        rep.ptxopt_seconds = time.perf_counter() - t0
        rep.ptx = out
        if rep.reason:
            warnings.warn(f"ptxopt: {name}: kept Triton's own PTX: {_one_line(rep.reason)}",
                          PtxoptTritonWarning, stacklevel=3)  # the stage that called rewrite (library_call between)
        try:
            metadata["ptxopt"] = {"version": code_digest(), "pipeline": rep.pipeline, "changed": rep.changed,
                                  "verdict": rep.verdict, "source_hash": rep.source_hash,
                                  "reason": rep.reason}
        except TypeError:
            pass
        with self._lock:
            self.reports.append(rep)
        return out

    def _tuned_first(self, contract: list, name: str, ptx: str, rep: KernelReport) -> list:
        """The alternative tuning estimated under first (checked first, and the estimate's loop trips
        are counted under it, as tuning counted them); the rest after it, in their order."""
        tuned = getattr(self.chooser, "tuned_check_launch", None)
        words = tuned(name, ptx) if tuned is not None else ""
        if not words:
            return contract
        for i, alt in enumerate(contract):
            if alt.describe() == words:
                return [alt] + contract[:i] + contract[i + 1:]
        line = f"tuned under the check launch {words!r}, which this compile's contracts do not offer"
        rep.warnings.append(line)
        rep.why_pipeline += f"; {line}"
        return contract

    def _optimize(self, ptx, name, metadata, box, backend, options, rep: KernelReport) -> str:
        from ptxopt.api import optimize
        from ptxopt.ptx.parser import parse
        from ptxopt.toolchain.arch import resolve_arch
        from ptxopt.triton.contract_from_triton import triton_contracts, triton_performance
        from ptxopt.triton.triton_ptxas import triton_compile

        pipe, why = self.chooser.choose(name, ptx)
        rep.why_pipeline = why
        objective = self.objective
        tuned = getattr(self.chooser, "tuned_objective", None)
        tuned_objective, tuned_launch = tuned(name, ptx) if tuned is not None and pipe is not None else ("", "")
        if tuned_objective:  # judged under what tuning optimised, never silently under another objective
            if objective is not None and objective != tuned_objective:
                rep.why_pipeline += (f"; tuned under {tuned_objective}, but enable(objective={objective!r}) "
                                     f"was asked: judged under {tuned_objective}, as tuned")
            else:
                rep.why_pipeline += f"; judged under {tuned_objective}, as tuned"
            objective = tuned_objective
        if pipe is None or len(pipe) == 0:
            return ptx
        rep.pipeline = str(pipe)
        module = parse(ptx, f"{name}.ptx")
        rep.arch = resolve_arch(module)
        contract = self.contracts.get(name)
        if contract is None and self.verify:
            fn = module.pick_entry(name) if any(f.name == name for f in module.entries) else module.entries[0]
            params = [(p.name, p.dtype.lstrip(".")) for p in (fn.params or ())]
            contract = triton_contracts(fn.name, params, dict(metadata), box["args"])
            contract = self._tuned_first(contract, name, ptx, rep)
        compile = triton_compile(backend, options)
        tuned_toolchain = getattr(self.chooser, "tuned_toolchain", None)
        if tuned_toolchain is not None:  # tuned with this very ptxas command, or the report says what differs
            from ptxopt.triton.tune_toolchain import mismatch, toolchain_of

            differs = mismatch(tuned_toolchain(name, ptx), toolchain_of(compile.ptxas, compile.flags))
            rep.why_pipeline += f"; {differs}" if differs else "; tuned with the same ptxas and flags"
            if differs:
                rep.warnings.append(differs)
                warnings.warn(f"ptxopt: {name}: {differs}", PtxoptTritonWarning, stacklevel=2)
        memo = None
        if self.rejections is not None and name not in self.contracts:
            from ptxopt.triton.rejections import rejection_key

            memo = rejection_key(self.key, ptx, contract, compile.ptxas, compile.flags, rep.arch)
            known = self.rejections.get(memo) if memo is not None else None
            if known is not None:  # this very check did not accept the rewrite before: Triton's PTX
                _from_memo(rep, known)
                return ptx
        res = optimize(ptx, pipe, contract=contract, verify=self.verify, compile=compile,
                       filename=f"{name}.ptx", objective=objective,
                       performance=triton_performance(module, dict(metadata)), if_slower=self.if_slower,
                       parsed=module, check_steps=self.check_steps, estimate=self.estimate,
                       overlap_compiles=self.overlap_compiles, sass_store=self.sass_store,
                       min_improvement=self.min_improvement, timeout=self.timeout, budget_s=self.budget_s)
        if res.cubin:  # ptxas's output for res.ptx, from exactly this command line
            box["cubin"] = Assembled(res.ptx, rep.arch, compile.ptxas, tuple(compile.flags), res.cubin)
        rep.stage_seconds = dict(res.seconds)
        est = res.estimate
        if est is not None:
            rep.objective, rep.launch = est.objective, est.launch or ("one warp" if est.before is not None else "")
            rep.estimate = BeforeAfter(est.before, est.after)
            rep.estimate_note = est.note
            if tuned_launch and est.launch and _launch_key(est.launch) != _launch_key(tuned_launch):
                res.warnings.append(f"tuned on {tuned_launch}, judged on {est.launch}: the launches differ")
        rep.warnings = rep.warnings + list(res.warnings)
        for w in res.warnings:
            warnings.warn(f"ptxopt: {name}: {w}", PtxoptTritonWarning, stacklevel=2)
        rep.changed, rep.verdict, rep.verdict_note, rep.reason = res.changed, res.verdict, res.verdict_note, res.reason
        rep.contract = res.contract
        if res.verdict is Verdict.PROVED and contract:  # no launch was needed; say what the metadata would have given
            first = contract[0] if isinstance(contract, (list, tuple)) else contract
            rep.contract = f"{res.contract} (proved); from Triton's metadata: {first.source.split('; ')[0]}"
        rep.coverage = None if res.coverage is None else float(res.coverage.output_bytes)
        rep.registers, rep.spills = res.registers, res.spills
        rep.passes = _summarise(res.records, module)
        if memo is not None and not res.changed and res.verdict in (Verdict.DIFFER, Verdict.INCONCLUSIVE) \
                and res.reason.startswith("equivalence "):  # ptxas took the result; the check did not
            self.rejections.put(memo, _outcome(rep))
        return res.ptx


def _launch_key(words: str) -> tuple:
    """What a performance launch in words fixes: grid (given, or the blocks assumed), block, dynamic
    shared bytes, L2. A search describes an assumed grid as "grid unknown ...; grid assumed: N blocks",
    the hook as "grid Nx1x1 ... grid assumed: N blocks (...)": the same launch."""
    import re

    grid = re.search(r"grid assumed: (\d+) blocks", words) or re.search(r"\bgrid (\d+x\d+x\d+)", words)
    block = re.search(r"\bblock (\d+x\d+x\d+)", words)
    shared = re.search(r"(\d+) B dynamic shared", words)
    l2 = re.search(r"\bL2 (cold|warm)", words)
    key = tuple(m.group(1) if m else None for m in (grid, block, shared, l2))
    if key[0] is not None and "x" in key[0]:  # a given grid: its number of blocks
        x, y, z = map(int, key[0].split("x"))
        key = (str(x * y * z),) + key[1:]
    return key if all(k is not None for k in key[:2]) else (words,)


def _outcome(rep: KernelReport) -> dict:
    """What a rejected check leaves in the report (:mod:`ptxopt.triton.rejections`)."""
    return {"verdict": str(rep.verdict.value if isinstance(rep.verdict, Verdict) else rep.verdict),
            "verdict_note": rep.verdict_note, "reason": rep.reason, "contract": rep.contract,
            "coverage": rep.coverage, "registers": list(rep.registers), "spills": list(rep.spills),
            "passes": rep.passes}


def _from_memo(rep: KernelReport, known: dict) -> None:
    rep.changed, rep.verdict = False, Verdict(known["verdict"])
    rep.verdict_note, rep.reason, rep.contract = known["verdict_note"], known["reason"], known["contract"]
    rep.coverage = known["coverage"]
    rep.registers, rep.spills = BeforeAfter(*known["registers"]), BeforeAfter(*known["spills"])
    rep.passes = known["passes"]
    rep.rejection_remembered = True


@dataclass(frozen=True)
class Assembled:
    """One ptxas run of the hook: the text, the ``-arch``, Triton's ptxas binary and flags, the cubin."""

    ptx: str
    arch: str
    ptxas: str
    flags: tuple
    cubin: bytes


def reusable_cubin(done: Assembled | None, src, backend, options) -> bytes | None:
    """``done.cubin`` when Triton's ``cubin`` stage would run the same
    command on the same text: the text is byte-identical, the ptxas binary
    and flags are those :func:`~ptxopt.triton.triton_ptxas.triton_ptxas_command`
    rebuilds now from Triton's knobs, and the architecture is the one
    Triton's ``make_cubin`` names (``--gpu-name``). ptxas is deterministic:
    the same command on the same text gives the same bytes (checked against
    Triton's own stage by ``tests/triton/test_triton_hook.py``), so Triton would
    only pay a second time for the cubin it already has. None (Triton's stage
    runs as it is) otherwise, and whenever Triton was asked to print ptxas's
    log (``knobs.nvidia.dump_ptxas_log``), which only its own run prints."""
    if done is None or not isinstance(src, str) or src != done.ptx:
        return None
    try:
        from triton import knobs
        from triton.backends.nvidia.compiler import sm_arch_from_capability

        from ptxopt.triton.triton_ptxas import triton_ptxas_command

        if knobs.nvidia.dump_ptxas_log:
            return None
        path, flags = triton_ptxas_command(backend, options)
        arch = sm_arch_from_capability(backend._parse_arch(options.arch))
    except Exception:  # another Triton: its own stage decides
        return None
    if (str(path), tuple(flags), arch) != (str(done.ptxas), done.flags, done.arch):
        return None
    return done.cubin


def _disk_root(where):
    """enable()'s ``disk_cache``: the hook's folder, or None."""
    from pathlib import Path

    if where is False or where is None:
        return None
    if where is True:
        from ptxopt.evaluate.cache import default_cache_path

        return default_cache_path().parent / "triton-hook"
    return Path(where)


def _signature_of(src):
    """The signature from the first stage's input (an MLIR module), or None."""
    from ptxopt.triton.signature import parse_signature

    try:
        return parse_signature(str(src))
    except Exception:
        return None


def _one_line(e) -> str:
    s = " ".join(str(e).split())
    return s if len(s) <= 400 else s[:397] + "..."


# ---------------------------------------------------------------------------
# enable / disable / report
# ---------------------------------------------------------------------------

_active: StagesHook | None = None


def enable(pipeline=None, *, policy=None, pipelines=None, verify: bool = True,
           contracts: dict | None = None, objective: str | None = None,
           check_steps: int | None = HOOK_CHECK_STEPS, estimate: bool = True, disk_cache=True,
           min_improvement: float | None = None, timeout: float | None = HOOK_PASS_TIMEOUT,
           budget_s: float | None = None) -> StagesHook:
    """Pass every kernel Triton compiles from now on through ptxopt.

    Give exactly one of ``pipeline`` (a pipeline string or
    :class:`~ptxopt.passes.pipeline.Pipeline`, for every kernel), ``policy`` (a
    checkpoint of ``ptxopt train``, or a ranker: its top choice, measuring nothing, see
    :mod:`ptxopt.triton.choose`) or ``pipelines`` (a results file of
    ``ptxopt search`` over a Triton cache directory). ``verify=False`` skips
    the interpreter (ptxas still checks). ``contracts``: ``{kernel name:
    Launch}`` overriding the launch contract derived from Triton's metadata.
    ``objective``: what "faster" means (None: ``throughput`` on Triton's block
    and shared memory with an assumed grid; ``latency``: one warp). A
    ``policy``'s or ``pipelines``' choice estimated slower than Triton's own
    PTX is not used; an explicit ``pipeline`` is applied as asked, with a
    warning saying how much slower it is estimated.
    ``check_steps``: the interpreter's budget for one kernel's equivalence
    check (:data:`HOOK_CHECK_STEPS`; None: no budget). A check that spends it
    keeps Triton's PTX, reported ``inconclusive (budget)``; the prover, tried
    first, is not limited by it. ``estimate=False``: no speed comparison (the
    nvdisasm run it needs is most of the hook's time on small kernels, ~0.2 s
    of CPU whatever the kernel): every rewrite that passes the checks is
    used, also one a policy or pipelines file chose and the model would rate
    slower. ``disk_cache``: where the hook keeps, for later processes, the
    SASS listings its estimates read (:mod:`ptxopt.measure.sass_store`) and
    the checks that did not accept a rewrite (:mod:`ptxopt.triton.rejections`)
    -- True: ``triton-hook/`` in ptxopt's cache folder (beside
    ``$PTXOPT_CACHE``, else ``~/.cache/ptxopt``); a path; False: none. A
    kernel compiled again (a fresh Triton cache, another pipeline over the
    same Triton PTX) then needs no nvdisasm run for a cubin seen before, and
    no check whose rejection is known.
    ``min_improvement``: the smallest estimated gain (percent) for which a
    ``policy``'s or ``pipelines``' choice replaces Triton's PTX (None:
    :data:`ptxopt.evaluate.pair.MIN_IMPROVEMENT_PCT`); below it the report
    says "no change worth making".
    ``timeout``: seconds the passes of one kernel may take
    (:data:`HOOK_PASS_TIMEOUT`; None: no limit; enforced when Triton compiles
    on the main thread); what a pass prints is kept off stdout and reported
    as a :class:`PtxoptTritonWarning`. Each kernel's rewrite leaves the
    program's signal handlers, ``ITIMER_REAL``, stdout, GC state and
    environment as they were (:mod:`ptxopt.support.host_state`).
    ``budget_s``: the most seconds ptxopt may add to one kernel's compile
    (None: no limit); past it, checked between stages, Triton's PTX is kept
    at once and the report says so. Each kernel's report says what ptxopt
    added (:attr:`KernelReport.cost`).
    Replaces a previous :func:`enable`; refuses to replace someone else's hook."""
    global _active
    from ptxopt.triton.choose import FixedPipeline, TunedPipelines, policy_chooser

    given = [x is not None for x in (pipeline, policy, pipelines)]
    if sum(given) != 1:
        raise ValueError("enable() takes exactly one of pipeline=, policy= or pipelines=")
    try:
        from triton import knobs
    except ImportError as e:
        raise RuntimeError(f"ptxopt.triton needs Triton (pip install 'ptxopt[triton]'): {e}") from None
    if pipeline is not None:
        chooser = FixedPipeline(pipeline)
    elif pipelines is not None:
        chooser = TunedPipelines(pipelines)
    else:
        chooser = policy_chooser(policy)
    current = knobs.runtime.add_stages_inspection_hook
    if current is not None and not isinstance(current, StagesHook):
        raise RuntimeError("another add_stages_inspection_hook is installed in triton.knobs.runtime; "
                           "ptxopt will not replace it")
    hook = StagesHook(chooser, verify=verify, contracts=contracts, objective=objective,
                      if_slower="apply" if pipeline is not None else "keep", check_steps=check_steps,
                      estimate=estimate, disk_cache=disk_cache, min_improvement=min_improvement,
                      timeout=timeout, budget_s=budget_s)
    knobs.runtime.add_stages_inspection_hook = hook
    _active = hook
    return hook


def disable() -> None:
    """Remove ptxopt's hook (kernels compiled while it was on stay in the cache
    under their own key)."""
    global _active, _last_reports
    if _active is not None:
        _last_reports = list(_active.reports)
    try:
        from triton import knobs
    except ImportError:
        _active = None
        return
    if isinstance(knobs.runtime.add_stages_inspection_hook, StagesHook):
        knobs.runtime.add_stages_inspection_hook = None
    _active = None


def report() -> list[KernelReport]:
    """Every kernel the current (or last) :func:`enable` saw, in compile order."""
    return list(_active.reports) if _active is not None else list(_last_reports)


_last_reports: list[KernelReport] = []


__all__ = ["enable", "disable", "report", "KernelReport", "PtxoptTritonWarning", "StagesHook", "code_digest",
           "HOOK_CHECK_STEPS", "HOOK_PASS_TIMEOUT", "reusable_cubin"]
