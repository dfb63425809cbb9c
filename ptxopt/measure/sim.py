"""The ``sim`` backend: the SASS issue model of :mod:`ptxopt.sim` behind the
:class:`~ptxopt.measure.backend.Backend` protocol.

The model itself lives in :mod:`ptxopt.sim`; this module adapts it to the
evaluator: it compiles (or reuses the evaluator's ptxas result), disassembles
a whole chunk with one nvdisasm run (:mod:`ptxopt.measure.disasm`), gets loop
trip counts from the interpreter (:mod:`ptxopt.measure.measured_trips`) and turns the
model's answer into a :class:`~ptxopt.measure.backend.Measurement`.
"""

from __future__ import annotations

from typing import Any, Sequence

from ptxopt.support.digests import source_digest

from ptxopt.measure.backend import MeasureError, MeasureJob, Measurement

#: The source the model's estimates depend on (its digest is the backend's version).
SOURCES = ("sim", "analysis/global_footprint.py", "analysis/carried_footprint.py")


class SimBackend:
    """The SASS issue model (:mod:`ptxopt.sim`): an estimate, CPU only.

    Loops: trip counts come from the performance launch (its scalars, grid
    and block: :mod:`ptxopt.measure.loop_slice`) under either objective, else
    from the interpreter on the check launch (:mod:`ptxopt.measure.measured_trips`);
    where neither can be had the model's static fallback applies and the measurement says so (``fallback``
    and ``notes``).  A rewrite whose loops ran but whose counts match none of its SASS loops
    (:data:`ptxopt.measure.loop_slice.UNKNOWN`) is refused (``MeasureError("unsupported")``): its
    static walk is not comparable with the original's counted one, and would read as a gain.  Warps: the launch (corpus spec or geometry) goes to the
    many-warp part of the model (occupancy, waves, issue and bandwidth
    bounds), see :func:`ptxopt.sim.simulate`.
    """

    name = "sim"
    is_estimate = True
    #: a CPU model: measuring overlaps the evaluator's other work and runs in every worker process
    pipelined = True
    #: The model's dynamic instruction budget per kernel; a walk that hits it is a
    #: ``truncated`` failure, not a result (:data:`ptxopt.sim.model.DEFAULT_MAX_STEPS`).
    max_steps: int | None = None

    def __init__(self, loop_trips: int | None = None):
        from ptxopt.sim import DEFAULT_LOOP_TRIPS

        self.loop_trips = loop_trips or DEFAULT_LOOP_TRIPS
        self.version = source_digest(*SOURCES) + f"/N={self.loop_trips}"

    @property
    def expected_error(self) -> float:
        """The model's typical relative error (:data:`ptxopt.sim.model.EXPECTED_ERROR`)."""
        from ptxopt.sim.model import EXPECTED_ERROR

        return EXPECTED_ERROR

    def measure(self, ptx_text: str, arch: str, spec: Any = None) -> Measurement:
        job = MeasureJob(ptx_text, arch, spec, spec.entry if spec is not None else None)
        out = self.measure_many([job])[0]
        if isinstance(out, Exception):
            raise out
        return out

    def measure_many(self, jobs: Sequence[MeasureJob]) -> list[Measurement | Exception]:
        """Measure every job: ptxas where the evaluator has not compiled yet, one
        nvdisasm run for the cubins whose SASS is not remembered yet, and the
        model for each (cubin, objective, launch, device) not measured yet
        (:mod:`ptxopt.measure.cubin_memo`)."""
        from ptxopt.toolchain import compile_ptx

        from .cubin_memo import digest, listings

        out: list[Measurement | Exception | None] = [None] * len(jobs)
        compiled = []
        for i, j in enumerate(jobs):
            if j.compiled is None:
                try:
                    j.compiled = compile_ptx(j.ptx_text, j.arch)
                except Exception as e:
                    out[i] = e
                    continue
            compiled.append(i)
        digests = [digest(jobs[i].compiled.cubin) for i in compiled]
        for i, d, listing in zip(compiled, digests, listings([jobs[i].compiled.cubin for i in compiled], digests)):
            if isinstance(listing, Exception):
                out[i] = listing
                continue
            try:
                out[i] = self._simulate(jobs[i], listing, d)
            except Exception as e:
                out[i] = e
        return out  # type: ignore[return-value]

    def _simulate(self, job: MeasureJob, listing, cubin_digest: str | None = None) -> Measurement:
        from ptxopt.sim.sass_decode import decode

        from .cubin_memo import ESTIMATES, decoder_tag

        compiled = job.compiled
        entry = job.entry or next(iter(compiled.kernels), None)
        program = decode(listing, entry)
        trips, source, notes = self._trip_counts(job, program, entry)
        kw = {} if self.max_steps is None else {"max_steps": self.max_steps}
        kw.update(_objective_kw(job))

        def run() -> Measurement:
            return self._model(job, program, trips, source, notes, kw)

        if cubin_digest is None:
            return run()
        # everything the model reads besides the SASS: the entry, the device, ptxas's resources for
        # the entry, the objective and launch (kw, and the launch as described), the trip counts
        key = (decoder_tag() + cubin_digest, entry, job.arch, compiled.arch, repr(compiled.kernels.get(entry)), job.objective,
               repr(sorted(kw.items())), _describe(job, kw), repr(sorted((trips or {}).items(), key=repr)), source,
               tuple(notes), self.loop_trips, self.max_steps)
        return ESTIMATES.get().get_or_compute(key, run)

    def _model(self, job: MeasureJob, program, trips, source, notes, kw: dict) -> Measurement:
        from ptxopt.sim import simulate
        from ptxopt.sim.throughput import KernelFacts

        from .loop_slice import UNKNOWN

        compiled = job.compiled
        if source == UNKNOWN and job.original is not None:
            # the original's loops got their trips and this rewrite's did not: the static walk would take
            # each loop about N times, a "gain" that is the model's loss of the trips, not the rewrite's
            raise MeasureError("unsupported", f"{notes[-1]}: this rewrite's estimate is not comparable with "
                                              "the original's")
        r = simulate(program, compiled, trips or None, loop_trips=self.loop_trips, **kw)
        if r.truncated:
            raise MeasureError("truncated", f"the sim model {next(n for n in r.notes if 'stopped after' in n)}: "
                                            f"{r.cycles:g} cycles is a lower bound, not an estimate")
        return Measurement(
            cycles=r.cycles, estimate=True, registers=r.registers, spill_store_bytes=r.spill_store_bytes,
            spill_load_bytes=r.spill_load_bytes, sass_instructions=r.sass_instructions, fallback=r.fallback,
            notes=tuple(notes) + tuple(r.notes) + (_UNCALIBRATED,) * ("launch" in kw),
            extra={"trip_counts": source, "warps": r.warps, "issued_instructions": r.issued_instructions,
                   "resident_warps": r.resident_warps, "waves": r.waves, "bound": r.bound,
                   # a throughput estimate has no calibrated error bar: no GPU has measured one
                   "expected_error": None if "launch" in kw else r.expected_error,
                   # what ptxopt.sim.throughput.estimate needs to re-score this candidate under
                   # another launch or objective: KernelFacts.of(extra["facts"])
                   "facts": KernelFacts.of(r).to_json(),
                   "objective": job.objective, "performance": _describe(job, kw),
                   # where the DRAM floor's bytes come from (counts / exact / extrapolated / unknown)
                   "footprint": kw["dram_floor"].to_json() if kw.get("dram_floor") is not None else None},
        )

    def _trip_counts(self, job: MeasureJob, program, entry) -> tuple[dict, str, list[str]]:
        """Trip counts at the performance launch when there is one (both
        objectives), else the check launch's, else static
        (:func:`ptxopt.measure.loop_slice.trip_counts_for`)."""
        from .loop_slice import trip_counts_for

        check = None
        if job.profile_loops and job.module is not None:
            check = {"spec": job.spec} if job.spec is not None else \
                {"geometry": job.geometry} if job.geometry is not None else None
        return trip_counts_for(program, job.module, entry, check=check, performance=job.performance,
                               blocks=job.blocks, static_n=self.loop_trips, synthesise=job.profile_loops)


_UNCALIBRATED = ("throughput ESTIMATE for the whole launch: uncalibrated (the model's +-25% is for single-warp "
                 "latency; no GPU has measured a throughput figure yet)")


def _describe(job: MeasureJob, kw: dict) -> str | None:
    """The launch an estimate is for, in words (None for ``latency``: one warp)."""
    if "launch" not in kw:
        return None
    grid, block, shared = kw["launch"]
    dims = "x".join(map(str, block))
    src = job.performance.describe() if job.performance is not None else \
        f"block {dims} from the check launch, {shared} B dynamic shared (no performance launch given)"
    if grid is None:
        n = kw.get("blocks")
        src += f"; grid assumed: {n} blocks" if n else "; grid assumed"
    return src + f"; L2 {kw.get('l2', 'cold')}"


def _objective_kw(job: MeasureJob) -> dict:
    """What :func:`ptxopt.sim.simulate` is given for the job's objective:
    nothing for ``latency`` (one warp: the figure the model is calibrated
    on); the performance launch for ``throughput`` -- its grid, or
    ``job.blocks`` assumed from the original's occupancy when it has none;
    without a performance launch, the check launch's block with an assumed
    grid. The check launch's grid is never used as the user's: it is sized
    for the interpreter, not for the GPU."""
    if job.objective != "throughput":
        return {}
    perf = job.performance
    block = perf.block if perf is not None else job.check_block
    if block is None:
        raise MeasureError("unsupported", "the throughput objective needs the block size of the performance "
                                          "launch (--perf-block, a contract's \"performance\", the manifest)")
    grid = perf.grid if perf is not None else None
    kw = {"launch": (grid, tuple(block), int(perf.shared_bytes if perf is not None else 0)), "l2": job.l2}
    if grid is None:
        kw["blocks"] = job.blocks
    if perf is not None and perf.footprint_bytes is not None:
        kw["footprint_bytes"] = perf.footprint_bytes
    kw["dram_floor"] = _dram_floor(job, perf)
    fl = _arithmetic_floors(job, perf)
    if fl is not None:
        kw["floors"] = fl
    if perf is not None and perf.grid is not None:
        kw["lanes"] = _lane_charges(job, perf)
    return kw


def _lane_charges(job: MeasureJob, perf):
    """The per-lane strides of the job's global accesses at the performance launch
    (:mod:`ptxopt.sim.coalescing`): the walk charges the sectors a warp's lanes touch."""
    from ptxopt.sim.coalescing import lane_charges

    return lane_charges(job.module if job.module is not None else job.ptx_text, job.entry, perf)


def _arithmetic_floors(job: MeasureJob, perf):
    """The launch's FP32/FP16/tensor work over the device's peaks (:mod:`ptxopt.sim.floors`) for the
    job's own (transformed) PTX at the performance launch: bounds the throughput estimate cannot beat.
    None without a grid (the work of an assumed grid is no floor)."""
    from ptxopt.sim.device import device_for
    from ptxopt.sim.floors import arithmetic_floors

    if perf is None or perf.grid is None or perf.block is None:
        return None
    return arithmetic_floors(job.module if job.module is not None else job.ptx_text, job.entry, perf,
                             device_for(job.arch))


def _dram_floor(job: MeasureJob, perf):
    """The DRAM floor's input for the job's performance launch: the user's counts (``counts``), else
    the footprint of the job's own (transformed) PTX (:mod:`ptxopt.analysis.global_footprint`), with
    the original's exact floor carried when the job is a rewrite (:mod:`ptxopt.analysis.carried_footprint`)."""
    from ptxopt.analysis.carried_footprint import candidate_footprint
    from ptxopt.sim.throughput import DramFloor

    counts = perf.footprint_bytes if perf is not None else None
    launch = perf if perf is not None else None
    if launch is None:
        return DramFloor(None, "unknown")
    fp = candidate_footprint(job.original, job.module if job.module is not None else job.ptx_text, job.entry, launch,
                             counts)
    return DramFloor.of(fp)


def clear_memo() -> None:
    """Forget the SASS listings and estimates the active session remembers by cubin digest."""
    from .cubin_memo import clear

    clear()


__all__ = ["SimBackend", "SOURCES", "clear_memo"]
