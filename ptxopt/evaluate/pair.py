"""Is the rewritten kernel estimated faster? -- one original and one candidate text under one objective.

Search compares candidates by their evaluations; a caller that holds one
rewritten text (``ptxopt.optimize``, the Triton hook, a policy's final
pipeline) needs the same comparison once, so that it never applies a choice
the model rates slower. Both texts are evaluated as their own
baselines (the empty pipeline: nothing to check, ptxas and the backend
only), under the same objective and the same launch.

Under ``throughput`` with no grid known, the grid is assumed once, from the
ORIGINAL kernel's occupancy (:data:`ptxopt.sim.throughput.ASSUMED_WAVES` full
waves), and that same grid is given to both: a register budget must change
how fast the work runs, not how much work there is.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from .candidate import Candidate, objective_for, performance_for

# the keep/apply threshold, decided with the other stage outcomes (:mod:`ptxopt.evaluate.stages`)
from .stages import MIN_IMPROVEMENT_PCT, worth_making  # noqa: E402,F401  (re-exported: callers read it here)


@dataclass(frozen=True)
class PairEstimate:
    """The estimates (or measurements) of one original and one candidate.

    ``before``/``after``: cycles summed over the entries compared, None when
    either could not be estimated (``note`` says why); ``launch``: the
    performance launch in words (None under ``latency``: one warp)."""

    objective: str
    launch: str | None
    before: float | None
    after: float | None
    estimate: bool = True
    note: str = ""

    @property
    def change(self) -> float | None:
        """``after / before - 1`` (positive: slower)."""
        if not self.before or self.after is None:
            return None
        return self.after / self.before - 1.0

    @property
    def slower(self) -> bool:
        c = self.change
        return c is not None and c > 0

    def describe(self) -> str:
        kind = "ESTIMATE" if self.estimate else "MEASUREMENT"
        if self.change is None:
            return f"{self.objective}: no comparison ({self.note})"
        where = f" on {self.launch}" if self.launch else " (one warp)"
        return (f"{self.objective}{where}: {self.before:g} -> {self.after:g} cycles "
                f"({100 * self.change:+.1f}%, {kind})")

    def to_json(self) -> dict:
        return {"objective": self.objective, "launch": self.launch, "before": self.before, "after": self.after,
                "change": self.change, "kind": "estimate" if self.estimate else "measurement",
                "note": self.note or None}


def _assumed_blocks(base: Candidate, perf, arch: str, compiled, check) -> int | None:
    """The grid blocks the evaluator assumes for a throughput estimate whose
    performance launch has no grid (:func:`ptxopt.evaluate.prepare.assumed_blocks`):
    the ORIGINAL's occupancy (``compiled``: ptxas's result for it) for
    :data:`~ptxopt.sim.throughput.ASSUMED_WAVES` full waves. None: ``perf``
    has a grid, or nothing can be assumed. Passed as the job's ``blocks``, never
    written into the grid: an assumed grid is no grid to the sim backend (no
    arithmetic floors, no footprint at that launch), as in tuning."""
    from ptxopt.sim.device import device_for
    from ptxopt.sim.throughput import KernelFacts, assumed_blocks

    if perf is not None and perf.grid is not None:
        return None
    k = compiled.kernels.get(base.entry) if compiled is not None else None
    if k is None or not k.registers:
        return None
    block, shared = (perf.block, perf.shared_bytes) if perf is not None else (check.block, check.shared_bytes)
    facts = KernelFacts(0.0, 0, registers=k.registers, shared_bytes=k.shared_bytes or 0)
    return assumed_blocks(facts, (None, block, shared), device_for(arch))


def _fixed_grid(base: Candidate, perf, arch: str | None, compiled=None):
    """``perf`` (or the check launch's block) with the grid the original's
    occupancy gives for the assumed waves; ``perf`` itself when it has a grid
    or nothing can be assumed. ``compiled``: ptxas's result for the original
    when the caller has it (else it is compiled here)."""
    from ptxopt.equivalence.launch import Launch, Origin, Role
    from ptxopt.sim.device import device_for
    from ptxopt.sim.throughput import ASSUMED_WAVES, KernelFacts, assumed_blocks
    from ptxopt.toolchain import compile_ptx
    from ptxopt.toolchain.arch import resolve_arch

    from ptxopt.evaluate.prepare import original

    if perf is not None and perf.grid is not None:
        return perf
    arch = arch or resolve_arch(base.ptx)
    module = original(base.ptx, base.label).module  # parsed once for this and the evaluation
    entry = base.entry or next(f.name for f in module.entries)
    block, shared = (perf.block, perf.shared_bytes) if perf is not None else ((base.launch or _check(base, module,
                                                                                                    entry)).block, 0)
    k = (compiled if compiled is not None else compile_ptx(base.ptx, arch)).kernels.get(entry)
    if k is None or not k.registers:
        return perf
    facts = KernelFacts(0.0, 0, registers=k.registers, shared_bytes=k.shared_bytes or 0)
    n = assumed_blocks(facts, (None, block, shared), device_for(arch))
    why = f"grid assumed: {n} blocks ({ASSUMED_WAVES} full waves at the original's occupancy)"
    if perf is None:
        return Launch((n, 1, 1), block, 0, origin=Origin.INFERRED, role=Role.PERFORMANCE,
                      source=f"the check launch's block; {why}", entry=entry)
    return replace(perf, grid=(n, 1, 1), source=f"{perf.source}; {why}")


def _check(base: Candidate, module, entry: str):
    from ptxopt.equivalence.launch_contract import check_launch

    return check_launch(module, entry)


def estimate_pair(original: str, candidate: str, *, entry: str | None = None, launch=None, performance=None,
                  objective: str | None = None, spec=None, arch: str | None = None, backend: str = "sim",
                  cache=None, parsed=None) -> PairEstimate:
    """Evaluate ``original`` and ``candidate`` (PTX texts) as they are, under
    ``objective`` (None: :func:`~ptxopt.evaluate.candidate.objective_for`) and
    the performance ``launch`` (a :class:`~ptxopt.equivalence.launch.Launch`,
    role performance; None: the manifest ``spec``'s, else unknown). ``launch``
    is the check launch (the sim's loop trip counts). ``parsed``: the caller's
    ``parse(original)``, so that the original is not parsed again."""
    from . import evaluate_many

    base = Candidate(original, "", entry=entry, spec=spec, launch=launch, performance=performance)
    if parsed is not None:
        from ptxopt.evaluate.prepare import original as remember

        remember(original, base.label, parsed)
    obj = objective_for(base, objective)
    perf = performance_for(base)
    try:
        if obj == "throughput":
            perf = _fixed_grid(base, perf, arch)
    except Exception as e:  # ptxas rejects the original, no entry: nothing to compare
        return PairEstimate(obj, None, None, None, note=f"the original cannot be estimated: {e}")
    base = replace(base, performance=perf)
    before, after = evaluate_many([base, replace(base, ptx=candidate, rewritten_from=original)], cache=cache, arch=arch,
                                  backend=backend,
                                  objective=obj, prove=False)
    where = after.performance or before.performance
    if not (before.ok and after.ok):
        bad = before if not before.ok else after
        which = "original" if bad is before else "candidate"
        return PairEstimate(obj, where, None, None, bad.estimate, f"the {which} could not be estimated: "
                                                                 f"{bad.status}: {bad.error}")
    return PairEstimate(obj, where, before.cycles, after.cycles, after.estimate)


def estimate_compiled(original: str, candidate: str, before, after, *, entry: str | None = None, launch=None,
                      performance=None, objective: str | None = None, arch: str | None = None, parsed=None,
                      candidate_module=None) -> PairEstimate:
    """:func:`estimate_pair` for two texts the caller has compiled already:
    ``before``/``after`` are ptxas's results (:class:`~ptxopt.toolchain.CompileResult`)
    for ``original``/``candidate``, from the caller's own ptxas and flags --
    the cubins that will run (the Triton hook: Triton's binary and flags). No
    ptxas run of its own: both cubins go to the ``sim`` backend together (one
    nvdisasm run), under the same objective, performance launch and assumed
    grid (from ``before``'s occupancy) as :func:`estimate_pair`; the check
    launch (loop trip counts when there is no performance launch) is chosen
    as the evaluator chooses it. ``parsed``/``candidate_module``: the
    caller's parses of the two texts (else parsed here)."""
    from ptxopt.equivalence.infer import infer_launch
    from ptxopt.equivalence.launch import from_spec
    from ptxopt.measure.backend import MeasureError, MeasureJob, Measurement, measure_many
    from ptxopt.measure.backend_registry import get_backend
    from ptxopt.ptx.parser import parse
    from ptxopt.toolchain.arch import resolve_arch

    module = parsed if parsed is not None else parse(original)
    cand_module = candidate_module if candidate_module is not None else parse(candidate)
    arch = arch or resolve_arch(module)
    fn = next((f for f in module.entries if f.name == entry), None) if entry else \
        (module.entries[0] if module.entries else None)
    base = Candidate(original, "", entry=fn.name if fn is not None else entry, launch=launch,
                     performance=performance)
    obj = objective_for(base, objective)
    perf = performance_for(base)
    try:
        if fn is None:
            raise ValueError("no entry to estimate")
        # a given check launch is used as the evaluator uses it (its geometry, not a corpus entry the text
        # matches): tuning and applying then count the same loop trips
        spec = _spec_of(module, fn.name) if launch is None else None
        check = launch or (from_spec(spec) if spec is not None else infer_launch(fn, module))
        # under throughput without a grid: the grid blocks the evaluator assumes (the original's occupancy),
        # as the job's blocks -- the performance launch keeps no grid, as in tuning (evaluate/batch.py _job)
        blocks = _assumed_blocks(base, perf, arch, before, check) if obj == "throughput" else None
    except Exception as e:  # no entry, a launch that cannot be had: nothing to compare
        return PairEstimate(obj, None, None, None, note=f"the original cannot be estimated: {e}")
    given = check.interp_kwargs()
    spec = spec if spec is not None else given.get("spec")
    jobs = [MeasureJob(text, arch, spec, fn.name, compiled, mod, given.get("geometry"), True, objective=obj,
                       performance=perf, blocks=blocks, check_block=check.block, original=orig)
            for text, compiled, mod, orig in ((original, before, module, None),
                                              (candidate, after, cand_module, original))]
    out = measure_many(get_backend("sim"), jobs)
    where = None
    for m, which in zip(out, ("original", "candidate")):
        if not isinstance(m, Measurement):
            why = f"{m.category}: {m}" if isinstance(m, MeasureError) else f"{type(m).__name__}: {m}"
            return PairEstimate(obj, None, None, None, note=f"the {which} could not be estimated: {why}")
        where = where or m.extra.get("performance")
    return PairEstimate(obj, where, out[0].cycles, out[1].cycles, out[1].estimate)


def _spec_of(module, entry: str):
    """The corpus manifest entry the module's ``entry`` matches (the evaluator's rule), or None."""
    from ptxopt.interp import Program
    from ptxopt.interp.errors import InterpError
    from ptxopt.equivalence.interpret import spec_for

    try:
        return spec_for(Program(module), entry)
    except InterpError:
        return None


__all__ = ["PairEstimate", "estimate_pair", "estimate_compiled"]
