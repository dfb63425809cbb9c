"""Functional equivalence: run an original and a transformed kernel on the
same inputs and compare every byte they can leave behind, bit for bit.

A transformation must not change what a kernel computes, on any input. The
check runs both kernels through the interpreter (:mod:`ptxopt.interp`) on
identical arguments for several seeds and input *flavours* (ordinary random
values; edge values: signed zeros, subnormals, NaN, infinities, extremes;
values of wildly different magnitudes), and compares after each launch:

* *every* parameter buffer -- outputs, in/out buffers, and inputs too (a
  transformation that scribbles on an input is wrong);
* *every* ``.global`` variable of the module, module scope and function
  scope (``.global .u32 flag;``, ``.global .b8 out[64];``): kernels publish
  results there too. A mismatch names the variable.

Uninitialised memory (outputs, shared, local) holds the same seeded garbage
in both runs, so an element written by one kernel and not the other differs.

Trial ``t`` of each seed uses the input flavour and thread schedule of
``TRIAL_PLAN[t % 9]`` (every flavour with every schedule: lockstep,
warp-serial ascending, descending). Warp-serial schedules are legal GPU
interleavings under which a transformation that breaks synchronisation (a
load moved above a barrier, a barrier removed) reads data another warp has
not written yet. The plan's first four trials (the default) already cover
every flavour and every schedule, and pair a warp-serial schedule with plain
random inputs (edge inputs full of NaN can hide a race in a reduction: NaN
plus garbage is still NaN).

**Independent thread scheduling.** Warp-serial schedules still run the
lanes of a warp together, and since Volta they need not stay together: a
barrier dropped where only threads of one warp exchange data (the last steps
of a shared-memory reduction) shows under neither. When the original or the
transformed module synchronises (a ``bar``/``barrier`` or shared-memory
traffic, :func:`synchronises`) *and* the transformation changed an
instruction that is not pure arithmetic (a memory access, barrier, fence,
atomic, collective or branch: see changed-instruction coverage below), one
more launch runs (first seed, random inputs) under the ``threads`` schedule
(:data:`THREAD_SCHEDULE`: in the first and last CTA each thread runs alone
until it blocks). It costs a Python step per thread and instruction in those
CTAs, which is why it runs only then. An original that fails under it only
skips it (said in the launch).

**Shared-memory races.** A barrier dropped where the data race changes no
value under the schedules tried (a max reduction still finds the maximum;
redundant warps store last what the complete data gave) shows only to a
race detector (:mod:`ptxopt.interp.races`: two threads touch one shared byte
in one barrier interval, one of them storing a new value). When the
transformed module changed a kernel that synchronises, the first regular
launch (random inputs: with monotone ones a max reduction's stores often
rewrite the value already there, which is no race) runs with it, in both
kernels, and says so (``races``); a race the transformed kernel has and the original does not
is an ``error`` (``error_kind`` ``race``, naming the instruction, threads and
byte). If the original races too (warp-synchronous code), races are not
compared (a note says so).

**Extra launches.** Only when the transformed module changed something
(:func:`ptxopt.equivalence.changes.changes`), after the regular trials and
before the layouts, each marked ``extra`` in its launch: ``descending``
inputs (every input strictly decreasing: the extreme of each row or block
is its first element, so a reduction that skips or shifts an element
shows); for a manifest launch, *boundary scalars*
(:mod:`ptxopt.equivalence.boundary`: integer scalars one below the contract, and
at a boundary the kernel compares them against); and the thread-serial
launch above. A failure of the original in an extra launch skips it.

**Read footprints** (:mod:`ptxopt.equivalence.footprint`): when the
transformed module changed something, every launch with separate buffers
records which bytes of each buffer the loads of each loop (and those outside
loops) read, in both kernels. A launch where they differ (a loop skipping or
adding an element, a shifted load) is rerun with the elements only one
kernel reads spiked above, then below, every other value of their buffer
(``read_probe`` in the launch says what ran): a max or min reduction that
lost its extreme then differs. At most
:data:`MAX_READ_PROBES` launches of one check are rerun so. Every launch
with separate buffers also counts the bytes each loop's global reads did *not* read because
the program masked them (a false guard, a ``cp.async`` zero-fill:
:func:`~ptxopt.equivalence.footprint.masked_difference`); where the counts
differ the check ends ``inconclusive``: the extra or missing iterations see
only values the program fixes, which neither the flavours nor a spike can
vary (``masked_reads`` in the launch). The same launches record which
shared-memory bytes each CTA's loads read in each barrier interval
(:mod:`ptxopt.interp.shared_reads`); where the two kernels' differ and
nothing else does, the check ends ``inconclusive`` (``shared_reads`` in the
launch): a shared read shifted onto an element already counted drops a
partial no input buffer holds, so no spike reaches it
(:func:`~ptxopt.equivalence.footprint.shared_read_difference`).

**Memory layouts** (``layouts=True``, the default): after the regular trials,
one launch each (first seed, random inputs, lockstep) with

* ``alias`` -- a buffer the original writes and another pointer argument are
  the *same* buffer (an in-place call);
* ``overlap`` -- the written buffer starts ``OVERLAP_BYTES`` into the other;
* ``unaligned`` -- every buffer base is aligned only to its element size
  (4 bytes for float32), not to 256 as ``cudaMalloc`` gives: legal for any
  pointer the kernel does not declare ``.ptr .align N`` (N >= 16), so a
  transformation that *assumes* 16-byte alignment (``ld.v4`` on a parameter
  pointer) faults here while the original does not -- an ``error``;
* ``unaligned-inputs`` -- only when the original cannot run ``unaligned``
  (it stores with vectors itself, say): the same for the buffers it does not
  store to.

A layout is used only where it is legal: never on a ``.noalias`` parameter,
the aliasing ones not at all when the kernel reads through the non-coherent
path (``ld.global.nc``/``ldu``, which promise the data is not written during
the launch). A layout trial the *original* cannot run (it faults, say
because it was itself compiled for aligned pointers) is skipped, and said.

**Launch contract.** Geometry comes from a corpus manifest entry (``spec``,
found automatically when the kernel's name and parameter names match
exactly one entry), which also says which arguments are buffers of what type
and which inputs have ranges, or from a :class:`Geometry` for kernels outside
the corpus: every 64-bit parameter then gets a buffer of ``buffer_bytes``
random float32 values, float scalars 1.0, and 32/16-bit integer scalars the
value ``scalars`` gives, else ``int_scalar``, else a value that *varies by
trial* (``SCALAR_PLAN``): the buffers' element count (``buffer_bytes // 4``,
so a kernel masked by ``offs < n`` does all the work it can), the launch's
thread count, and a small odd number (a partial tail). A trial whose
*defaulted* scalar makes the original fail (a fault; the step limit, which
is ``DEFAULT_SCALAR_STEPS`` for such launches, so a kernel that loops ``n``
or ``n * n`` times cannot stall the check, and a default that ran out of
steps once is not tried again) is skipped, and said; one that fails with
scalars given explicitly raises, as before. Every result lists the contract
it used: grid, block, shared bytes, and per launch the seed, flavour,
schedule, layout, every scalar's value and, for a layout, where each moved
buffer points (:attr:`VerifyResult.launches`).

**Assembly** (``assemble=True``, what ``ptxopt verify`` does): both modules
are first assembled by ptxas for ``arch`` (default: the original's
``.target``, :func:`ptxopt.toolchain.arch.resolve_arch`). A transformed
module ptxas rejects is an ``error`` (kind ``ptxas``, with ptxas's message),
never ``equal``; a rejected original raises :class:`AssemblyError`.

**Coverage.** Each result says what the original's regular launches
exercised, all together (:class:`Coverage`): the fraction of threads that
stored to global memory; the bytes of buffers and ``.global`` variables
stored at least once, as a fraction of the bytes of those the kernel stores
to at all (a :class:`Geometry` buffer's true size is unknown, so it counts
up to the last byte any launch stored: holes count, the unreachable tail of a
generous guess does not); and the conditional-branch directions taken, of
twice the conditional branches in the functions that ran.

**Changed-instruction coverage** (:mod:`ptxopt.equivalence.changes`): the
instructions the transformed module changed, per function (a sequence diff;
moved instructions count, a deleted one at its site in the original), and
whether each *ran* (its guard held in some thread) in some compared launch:
the transformed module's own for new, edited and moved instructions, the
original's for deleted ones. A change no launch ran was never tested, so the
result cannot be ``equal``: it is ``inconclusive``, naming the lines
(:attr:`Coverage.changed_not_run`), whatever ``min_coverage`` says.

Outcomes (:class:`VerifyResult`):

* ``equal`` -- every buffer and variable identical in every launch;
* ``mismatch`` -- the first differing element (buffer or variable), with
  both values, the launch's flavour, schedule and layout;
* ``error`` -- the *transformed* kernel failed where the original did not
  (memory fault, divergent barrier, unsupported instruction, ptxas
  rejection...): not equivalent, and worth a different message than a wrong
  value;
* ``inconclusive`` -- nothing differed, but a changed instruction never ran
  in any launch (always); or, only when the caller passes ``min_coverage``
  (the command line does, 0.5 by default), output-bytes
  coverage is below it, or a regular launch was skipped because the original
  failed under the default scalars; ``error`` says which. Without
  ``min_coverage`` such a result is ``equal`` (with ``notes``).

**Float precision.** Approximate float forms (``rcp.approx``, ``div.full``...)
are modelled within one ulp, keyed by the form and the inputs
(:func:`ptxopt.interp.fp.model_error`): a ``mismatch`` (or a candidate fault)
that disappears when the check is rerun with correctly rounded stand-ins is
``inconclusive`` ("depends on approximate float results", naming them). With
``cap``, an ``equal`` whose candidate uses a float precision form the original
does not (:func:`ptxopt.equivalence.assumptions.precision_change`) is
``inconclusive`` ("changes float precision").

If the *original* kernel fails on every launch, or on one whose scalars
were all given (a manifest entry, ``scalars``, ``int_scalar``), there is
nothing to compare against and :func:`verify` raises the interpreter's error.
"""

from __future__ import annotations

import zlib
from dataclasses import asdict, dataclass, field

import numpy as np

from ptxopt.ptx import opcodes
from ptxopt.equivalence.verdict import Verdict
from ptxopt.interp import InterpError, Program, run_kernel
from ptxopt.interp import limits
from ptxopt.interp.errors import LaunchError, StepLimit
from ptxopt.interp.launcher import Alias, Placed
from ptxopt.interp.workload import input_values, make_args, np_dtype
from ptxopt.ptx.ir import Module, iter_instructions
from ptxopt.equivalence.changes import changes, merge_executed
from ptxopt.equivalence.changes import check as check_changes
from ptxopt.equivalence.trial_budget import DEFAULT_MIN_COVERAGE, DEFAULT_SEEDS, DEFAULT_TRIALS
from ptxopt.equivalence.footprint import (SPIKES, footprint_difference, loop_tags, masked_difference,
                                          shared_read_difference, spiked)
from ptxopt.equivalence.nc_reads import NcReads, has_nc_loads, with_nc_tags
from ptxopt.equivalence.assumptions import (ASSUMES_NOALIAS, CHANGES_PRECISION, INEXACT, approximate_instructions,
                                            nc_evidence, precision_change, unproven_nc_loads)

TRIAL_PLAN = (
    ("random", "lockstep"), ("random", "warps"), ("edge", "lockstep"), ("scales", "warps-reversed"),
    ("edge", "warps"), ("scales", "lockstep"), ("random", "warps-reversed"), ("edge", "warps-reversed"),
    ("scales", "warps"),
)

#: Default of an integer scalar a :class:`Geometry` leaves open, by trial
#: ``t % 3``: the buffers' element count, the launch's thread count, a small
#: odd number (see the module doc).
SCALAR_PLAN = ("elements", "threads", "odd")

#: The schedule of the extra launch for kernels that synchronise (see
#: :func:`synchronises` and the module doc).
THREAD_SCHEDULE = "threads"

#: Memory layouts tried after the regular trials (see the module doc).
LAYOUTS = ("alias", "overlap", "unaligned", "unaligned-inputs")
OVERLAP_BYTES = 16

#: Step budget of the original's launches whose integer scalars took a
#: default (unless the caller sets ``max_steps``): a default the kernel loops
#: over (``for i < n``, or ``n * n`` work) must not stall the check.
DEFAULT_SCALAR_STEPS = 1_000_000

#: Launches of one check whose read-footprint difference may trigger the
#: spiked reruns (:mod:`ptxopt.equivalence.footprint`; two runs of each kernel per probe).
MAX_READ_PROBES = 2


class AssemblyError(InterpError):
    """ptxas rejects the *original* module (or cannot be run): nothing to
    compare against."""

    kind = "ptxas"


@dataclass
class Geometry:
    """Launch geometry and argument defaults for a kernel outside the corpus."""

    grid: tuple[int, int, int] = (1, 1, 1)
    block: tuple[int, int, int] = (1, 1, 1)
    shared_bytes: int = 0
    buffer_bytes: int = 65536
    scalars: dict = field(default_factory=dict)
    int_scalar: int | None = None


@dataclass
class Mismatch:
    buffer: str  # parameter (or manifest argument) name, or the .global variable's name
    index: int
    original: str
    transformed: str
    differing: int  # elements of this buffer that differ
    size: int
    seed: int
    flavour: str
    schedule: str = "lockstep"
    where: str = "parameter"  # "parameter" or "global variable"
    layout: str = "separate"
    trial: int = 0


@dataclass
class Coverage:
    """What the original's launches exercised (all launches together)."""

    threads: float = 0.0  # fraction of threads that stored to global memory (in some launch)
    output_bytes: float = 0.0  # bytes stored at least once / bytes of the buffers stored to at all
    written_bytes: int = 0
    output_size: int = 0  # bytes of the buffers and .global variables stored to at all
    outputs: tuple = ()  # their names
    branches: float = 1.0  # branch directions taken / 2 x conditional branches (1.0: none)
    branch_directions: int = 0
    conditional_branches: int = 0
    #: changed-instruction coverage (:mod:`ptxopt.equivalence.changes`): instructions
    #: the transformed module changed (both sides: new/edited/moved ones in it,
    #: deleted/edited/moved-away ones in the original), how many of them ran
    #: in some compared launch, and those that never ran (named)
    changed_instructions: int = 0
    changed_ran: int = 0
    changed_not_run: tuple = ()


@dataclass
class VerifyResult:
    kernel: str
    status: str  # "equal", "mismatch", "error" or (only with min_coverage) "inconclusive"
    trials: int  # launches compared (regular and memory-layout ones)
    mismatch: Mismatch | None = None
    error: str | None = None
    error_kind: str | None = None
    seeds: tuple = ()
    grid: tuple = ()
    block: tuple = ()
    shared_bytes: int = 0
    steps: tuple[int, int] = (0, 0)  # instructions issued, original / transformed (last trial)
    arch: str | None = None  # what ptxas assembled both for (None: not assembled)
    #: the launch contract, one dict per launch planned: seed, trial, flavour,
    #: schedule, layout, scalars (every scalar parameter's value), and
    #: ``skipped`` (why it was not compared) when it was not
    launches: list = field(default_factory=list)
    coverage: Coverage | None = None
    notes: list = field(default_factory=list)
    #: the check's :class:`~ptxopt.equivalence.budget.StepBudget` ended it (status ``inconclusive``)
    budget_spent: bool = False
    #: with ``nc_reads``: what the ``.nc`` read footprints showed (:mod:`ptxopt.equivalence.nc_reads`)
    nc_reads: NcReads | None = None
    #: why an ``equal`` was capped at ``inconclusive`` ("assumes noalias": :func:`verify`'s ``cap``)
    assumption: str | None = None

    @property
    def equal(self) -> bool:
        return self.status == "equal"

    @property
    def verdict(self) -> str:
        """The status in ptxopt's one verdict vocabulary (what ``eval`` and
        ``search`` report): ``equal``, ``differ`` (a differing value, or the
        transformed kernel faults or is rejected by ptxas where the original
        is not) or ``inconclusive``."""
        return {"mismatch": Verdict.DIFFER.value, "error": Verdict.DIFFER.value}.get(self.status, self.status)

    def to_json(self) -> dict:
        d = asdict(self)
        d["equal"] = self.equal
        d["verdict"] = self.verdict
        return d


def format_value(arr: np.ndarray, i: int) -> str:
    """``1.5 (0x3fc00000)`` for floats, the integer for integers."""
    v = arr[i]
    if arr.dtype.kind == "f":
        b = arr.view(np.dtype(f"u{arr.dtype.itemsize}"))[i]
        return f"{float(v)!r} (0x{int(b):0{arr.dtype.itemsize * 2}x})"
    return str(int(v))


def _first_difference(name, a, b, seed, flavour, schedule, where="parameter") -> Mismatch | None:
    ua = a.reshape(-1).view(np.dtype(f"u{a.dtype.itemsize}"))
    ub = b.reshape(-1).view(np.dtype(f"u{b.dtype.itemsize}"))
    if ua.shape != ub.shape:
        return Mismatch(name, 0, f"{ua.size} elements", f"{ub.size} elements", max(ua.size, ub.size),
                        a.size, seed, flavour, schedule, where)
    diff = np.flatnonzero(ua != ub)
    if len(diff):
        i = int(diff[0])
        return Mismatch(name, i, format_value(a.reshape(-1), i), format_value(b.reshape(-1), i),
                        len(diff), a.size, seed, flavour, schedule, where)
    return None


def compare_buffers(names, a_bufs, b_bufs, seed, flavour, schedule="lockstep") -> Mismatch | None:
    for name, a, b in zip(names, a_bufs, b_bufs):
        if a is None or b is None or a.nbytes == 0:
            continue
        mm = _first_difference(name, a, b, seed, flavour, schedule)
        if mm is not None:
            return mm
    return None


def _var_view(raw: np.ndarray, elem: int) -> np.ndarray:
    """A variable's bytes as unsigned elements of its declared size, when they divide it."""
    if elem in (2, 4, 8) and raw.size % elem == 0:
        return raw.view(np.dtype(f"u{elem}"))
    return raw


def compare_globals(po: Program, pt: Program, a_vars: dict, b_vars: dict, seed, flavour,
                    schedule="lockstep") -> Mismatch | None:
    """The first difference between the ``.global`` variables two launches
    left behind (:attr:`~ptxopt.interp.LaunchResult.globals`). A variable the
    transformed module no longer declares differs if the original wrote it."""
    for name, a in a_vars.items():
        v = po.statics.get(name)
        elem = v.elem if v is not None else 1
        b = b_vars.get(name)
        if b is None:
            init = v.init if v is not None and isinstance(v.init, (bytes, bytearray)) else b""
            start = np.frombuffer(bytes(init).ljust(a.size, b"\0")[: a.size], dtype=np.uint8)
            if not np.array_equal(a, start):
                return Mismatch(name, 0, "written", "not declared by the transformed module", a.size, a.size,
                                seed, flavour, schedule, "global variable")
            continue
        if a.size == 0:
            continue
        mm = _first_difference(name, _var_view(a, elem), _var_view(b, elem), seed, flavour, schedule,
                               "global variable")
        if mm is not None:
            return mm
    return None


# --------------------------------------------------------------------------
# arguments
# --------------------------------------------------------------------------


def _default_int(geo: Geometry, choice: str, threads: int) -> int:
    elements = max(1, geo.buffer_bytes // 4)
    if choice == "elements":
        return elements
    if choice == "threads":
        return threads
    return 2 * (min(threads, elements) // 3) + 1  # small, odd, not a multiple of a warp or vector


def _args_for_geometry(program: Program, entry: str, geo: Geometry, seed: int, flavour: str,
                       choice: str = "threads"):
    """``(args, defaulted)``: the arguments, and the names of the integer
    scalars that took the trial's default (``choice``, one of ``SCALAR_PLAN``)."""
    params = program.kernel_params(entry)
    threads = int(np.prod(geo.grid) * np.prod(geo.block))
    pointers = sum(1 for p in params if p.name not in geo.scalars and p.size == 8 and p.dtype in ("u64", "b64", "s64"))
    limits.require(pointers * max(4, geo.buffer_bytes // 4 * 4),
                   f"{pointers} buffer(s) of {geo.buffer_bytes:,} bytes (buffer_bytes)")
    out, defaulted = [], []
    for p in params:
        if p.name in geo.scalars:
            out.append(geo.scalars[p.name])
        elif p.size == 8 and p.dtype in ("u64", "b64", "s64"):
            rng = np.random.default_rng([seed & 0xFFFFFFFF, zlib.crc32(p.name.encode())])
            out.append(input_values("f32", geo.buffer_bytes // 4, rng, flavour))
        elif p.dtype in ("f32", "f64"):
            out.append(1.0)
        elif p.dtype in ("u32", "s32", "b32", "u16", "s16", "b16"):
            if geo.int_scalar is not None:
                out.append(geo.int_scalar)
            else:
                v = _default_int(geo, choice, threads)
                if p.dtype in ("u16", "s16", "b16"):
                    v = min(v, 0x7FFF)
                out.append(v)
                defaulted.append(p.name)
        else:
            raise LaunchError(f"no default for parameter {p.name} (.{p.dtype}); give it with "
                              "--scalar NAME=VALUE or use a manifest entry")
    return out, defaulted


def _scalar_values(names, args) -> dict:
    out = {}
    for n, a in zip(names, args):
        if isinstance(a, (np.ndarray, Placed, Alias)) or a is None:
            continue
        if isinstance(a, (bytes, bytearray)):
            out[n] = bytes(a).hex()
        elif isinstance(a, np.generic):
            out[n] = a.item()
        else:
            out[n] = a
    return out


# --------------------------------------------------------------------------
# memory layouts
# --------------------------------------------------------------------------


def synchronises(program: Program) -> bool:
    """The module has a CTA barrier or shared-memory traffic in some function:
    a kernel whose threads exchange data, where a barrier missing *inside* a
    warp shows only under a thread-serial schedule (:data:`THREAD_SCHEDULE`)."""
    memo = program.__dict__.get("_synchronises")
    if memo is not None:
        return memo
    found = False
    for fn in program.functions.values():
        for ins in iter_instructions(fn.body):
            if ins.opcode in ("bar", "barrier") or (ins.opcode == "cvta" and "shared" in ins.modifiers) \
                    or opcodes.space_of(ins) == "shared":
                found = True
                break
        if found:
            break
    program.__dict__["_synchronises"] = found
    return found


def _extra_plan(po, pt, kernel, spec, sites, seed: int, first: int, geometry=None) -> list:
    """The extra launches (see the module doc) as plan entries, trial numbers
    from ``first`` on (after the memory layouts')."""
    from ptxopt.equivalence.boundary import boundary_scalars

    sync = synchronises(po) or synchronises(pt)
    out = [(seed, first, "descending", "lockstep", "separate", {"kind": "descending inputs"})]
    if spec is not None:
        for k, (kind, scalars, what) in enumerate(boundary_scalars(spec, po, kernel)):
            out.append((seed, first + 1 + k, "random", "lockstep", "separate",
                        {"kind": f"{kind} scalars", "what": what, "scalars": scalars}))
    if any(not s.pure for s in sites) and sync:
        out.append((seed, first + 3, "random", THREAD_SCHEDULE, "separate", {"kind": "thread-serial"}))
    out += _trip_plan(po, pt, kernel, spec, geometry, seed, first + 4)
    return out


def _spike_probe(po, pt, kernel, spec, grid, block, shared, args, diff, names, pnames, run_seed, schedule, kw_o,
                 kw, seed, flavour, launch, nc=None):
    """``(mismatch, failure)`` of the launch rerun with the elements only the
    original reads spiked high, then low, then the same for the elements only
    the transformed kernel reads (``diff``: the two masks of
    :func:`~ptxopt.equivalence.footprint.footprint_difference`); the outcome
    is noted in ``launch`` (``read_probe``). ``failure``: the transformed
    kernel's error where the original ran. ``nc``: ``(tags of the original
    or False, tags of the candidate, NcReads)`` when the ``.nc`` footprints
    are compared (:mod:`ptxopt.equivalence.nc_reads`): every rerun adds to it."""
    ranges = {i: tuple(dict(p.extra)["range"]) for i, p in enumerate(spec.params)
              if "range" in dict(p.extra)} if spec is not None else {}

    def allowed(d):  # only inputs the contract lets take any value: not zero-initialised accumulators
        if spec is None:
            return d
        return {i: m for i, m in d.items() if i < len(spec.params) and spec.params[i].role in ("input", "inout")
                and dict(spec.params[i].extra).get("init") != "zero"}

    def count(d):
        return ", ".join(f"{pnames[i]} ({int(m.reshape(-1, args[i].itemsize).any(axis=1).sum())} elements)"
                         if isinstance(args[i], np.ndarray) else pnames[i] for i, m in d.items())

    where = "; ".join(f"read only by the {who}: {count(d)}" for who, d in zip(("original", "transformed"), diff) if d)
    ran, failed = [], []
    for who, d in zip(("original", "transformed"), diff):
        d = allowed(d)
        for direction in SPIKES if d else ():
            sp = spiked(args, d, direction, ranges)
            if sp is None:
                continue
            try:
                ro = run_kernel(po, kernel, grid, block,
                                [a.copy() if isinstance(a, np.ndarray) else a for a in sp], shared,
                                seed=run_seed, schedule=schedule, reads=nc[0] if nc else False, **kw_o)
            except InterpError:
                failed.append(f"{direction} ({who})")  # the original cannot run these values: no counterexample
                continue
            ran.append(f"{direction} ({who})")
            try:
                rt = run_kernel(pt, kernel, grid, block, sp, shared, seed=run_seed, schedule=schedule,
                                reads=nc[1] if nc else False, **kw)
            except InterpError as e:
                launch["read_probe"] = f"read footprints differ ({where}); spiked {direction} ({who}): the transformed fails"
                return None, e
            label = f"{flavour}, elements read by the {who} only spiked {direction}"
            if nc:
                nc[2].add(ro.reads, rt.reads, rt.nc_unrecorded, f"the rerun of trial {launch['trial']} spiked "
                          f"{direction} ({who})", rerun=True)
            mm = compare_buffers(names, ro.buffers, rt.buffers, seed, label, schedule)
            if mm is None:
                mm = compare_globals(po, pt, ro.globals, rt.globals, seed, label, schedule)
            if mm is not None:
                launch["read_probe"] = f"read footprints differ ({where}); spiked {direction} ({who}): differ"
                return mm, None
    launch["read_probe"] = (f"read footprints differ ({where}); "
                            + (f"spiked {', '.join(ran)}: equal" if ran else "no spiked launch ran")
                            + (f"; the original fails spiked {', '.join(failed)}" if failed else ""))
    return None, None


def _trip_plan(po, pt, kernel, spec, geometry, seed: int, first: int) -> list:
    """Launches at boundary trip counts of the loops the candidate changed
    (:func:`ptxopt.equivalence.boundary.loop_trip_plan`), trial numbers from ``first``."""
    from ptxopt.equivalence.boundary import loop_trip_plan

    names = [p.name for p in spec.params] if spec is not None else [p.name for p in po.kernel_params(kernel)]
    if spec is not None:
        current = {p.name: p.value for p in spec.params if p.role == "scalar" and isinstance(p.value, int)}
    else:
        current = {n: (geometry.scalars.get(n, geometry.int_scalar) if geometry is not None else None)
                   for n in names}
    plan, _ = loop_trip_plan(po, pt, kernel, current)
    out = []
    for j, (target, values) in enumerate(plan):
        scalars = {names.index(n): v for n, v in values.items() if n in names}
        what = ", ".join(f"{n} = {v}" for n, v in values.items())
        out.append((seed, first + j, "random", "lockstep", "separate",
                    {"kind": f"trip {target}", "what": what, "scalars": scalars}))  # target: "LOOP xN"
    return out


def _reads_noncoherent(fn) -> bool:
    for ins in iter_instructions(fn.body) if fn.body is not None else ():
        if opcodes.is_read_only_load(ins):
            return True
    return False


def _param_facts(program: Program, entry: str) -> dict:
    """Per parameter name: (``.noalias``, ``.ptr .align`` or None)."""
    fn = program.entry(entry)
    out = {}
    for d in fn.params or ():
        for it in d.items:
            out[it.name] = (".noalias" in d.attrs, d.align if d.is_ptr else None)
    return out


def _apply_layout(layout: str, program: Program, entry: str, args: list, written: list[int]):
    """``(args, None)`` for ``layout``, or ``(None, why not)`` when it does not apply legally."""
    params = program.kernel_params(entry)
    facts = _param_facts(program, entry)
    bufs = [i for i, a in enumerate(args) if isinstance(a, np.ndarray) and a.nbytes and params[i].size == 8]
    if layout in ("unaligned", "unaligned-inputs"):
        out = list(args)
        moved = 0
        for i in bufs:
            if layout == "unaligned-inputs" and i in written:
                continue
            a = args[i]
            off = a.dtype.itemsize
            align = facts.get(params[i].name, (False, None))[1] or 1
            if off >= 16 or off % align:
                continue  # the kernel may rely on that alignment
            out[i] = Placed(a, off)
            moved += 1
        return (out, None) if moved else (None, "no buffer may be less than 16-byte aligned")
    if _reads_noncoherent(program.entry(entry)):
        return None, "the kernel reads through the non-coherent path (ld.global.nc/ldu): no aliasing allowed"
    ok = [i for i in bufs if not facts.get(params[i].name, (False, None))[0]]
    dst = [i for i in written if i in ok]
    if not dst:
        return None, "no written buffer that may alias another"
    j = dst[0]
    others = [i for i in ok if i != j]
    if not others:
        return None, "no second buffer to alias with"
    i = others[0]
    a, b = args[i], args[j]
    out = list(args)
    if layout == "alias":
        if a.nbytes >= b.nbytes:
            out[j] = Alias(i, 0)
        else:
            out[i] = Alias(j, 0)
        return out, None
    # overlap: the written buffer starts OVERLAP_BYTES into the other one
    need = b.nbytes + OVERLAP_BYTES - a.nbytes
    if need > 0:
        extra = -(-need // a.itemsize)
        rng = np.random.default_rng(zlib.crc32(b"overlap"))
        pad = rng.integers(0, 256, extra * a.itemsize, dtype=np.uint8).view(a.dtype)
        out[i] = np.concatenate([a.reshape(-1), pad])
    out[j] = Alias(i, OVERLAP_BYTES)
    return out, None


# --------------------------------------------------------------------------
# the check
# --------------------------------------------------------------------------


def spec_for(program: Program, kernel: str):
    """The corpus manifest entry this kernel is a copy of, if exactly one
    entry has its name and parameter names; else None."""
    from ptxopt.kernels.corpus import CorpusError, load_manifest

    try:
        kernels = load_manifest()
    except CorpusError:
        return None
    names = [p.name for p in program.kernel_params(kernel)]
    hits = [k for k in kernels if k.entry == kernel and [p.name for p in k.params] == names]
    return hits[0] if len(hits) == 1 else None


def _as_program(m) -> Program:
    if isinstance(m, Program):
        return m
    if isinstance(m, Module):
        return Program(m)
    if isinstance(m, str):
        from ptxopt.ptx.parser import parse

        return Program(parse(m))
    raise TypeError(f"expected a Module, Program or PTX text, got {type(m).__name__}")


def _ptx_text(m, program: Program) -> str:
    if isinstance(m, str):
        return m
    from ptxopt.ptx.emit import emit

    return emit(program.module)


def _assemble(original, transformed, po, pt, arch):
    """Assemble both; ``None`` or the transformed module's error text."""
    from ptxopt.toolchain import ToolchainError, compile_ptx

    try:
        compile_ptx(_ptx_text(original, po), arch)
    except ToolchainError as e:
        if e.transient:  # ptxas crashed or hung: no verdict on either kernel
            raise
        raise AssemblyError(f"original kernel: ptxas ({arch}): {e} (give the architecture it was written for "
                            "with --arch, or skip assembly with --no-ptxas)") from None
    try:
        compile_ptx(_ptx_text(transformed, pt), arch)
    except ToolchainError as e:
        if e.transient:
            raise
        return f"ptxas ({arch}): {e}"
    return None


def _merge_coverage(acc: dict, cov: dict) -> None:
    for name, w in cov["written"].items():
        old = acc["written"].get(name)
        acc["written"][name] = w.copy() if old is None or old.shape != w.shape else old | w
    st = cov["stored_threads"]
    old = acc.get("stored_threads")
    acc["stored_threads"] = st.copy() if old is None or old.shape != st.shape else old | st
    for k, v in cov["branches"].items():
        acc["branches"][k] = acc["branches"].get(k, 0) | v
    acc["conditional_branches"] = max(acc.get("conditional_branches", 0), cov["conditional_branches"])


def _coverage(acc: dict, span_of=frozenset(), sites=(), executed_o=None, executed_t=None) -> Coverage:
    """``span_of``: buffers whose true size is unknown (a :class:`Geometry`
    guess): their size counts up to the last byte any launch stored.
    ``sites``: the changed instructions (:func:`ptxopt.equivalence.changes.changes`),
    checked against what ran in the compared launches."""
    outs = {n: w for n, w in acc["written"].items() if w.any()}
    size = sum(int(np.flatnonzero(w)[-1]) + 1 if n in span_of else w.size for n, w in outs.items())
    wrote = sum(int(w.sum()) for w in outs.values())
    st = acc.get("stored_threads")
    threads = float(st.mean()) if st is not None and st.size else 0.0
    cond = acc.get("conditional_branches", 0)
    dirs = sum(bin(v).count("1") for v in acc["branches"].values())
    changed = check_changes(list(sites), executed_o or {}, executed_t or {})
    return Coverage(threads=threads, output_bytes=(wrote / size) if size else 0.0, written_bytes=wrote,
                    output_size=size, outputs=tuple(sorted(outs)),
                    branches=(dirs / (2 * cond)) if cond else 1.0, branch_directions=dirs,
                    conditional_branches=cond, changed_instructions=changed[0], changed_ran=changed[1],
                    changed_not_run=changed[2])


def verify(original, transformed, kernel: str | None = None, seeds=DEFAULT_SEEDS,
           trials: int = DEFAULT_TRIALS, *, cap: bool = True, **options) -> VerifyResult:
    """Compare ``transformed`` against ``original`` (modules, programs or PTX
    text) on ``len(seeds) * trials`` launches, plus one per memory layout
    (``layouts``). ``spec`` (a corpus :class:`~ptxopt.kernels.corpus.KernelSpec`) or
    ``geometry`` says how to launch, or ``launch`` (a
    :class:`~ptxopt.equivalence.launch.Launch`, which gives one of them).

    ``assemble`` first runs ptxas on both for ``arch`` (default: the
    original's ``.target``), on ``original_text``/``transformed_text`` when
    given (the files as written), else on the modules as printed. ``min_coverage`` turns an ``equal`` whose
    output-bytes coverage is below it, or whose regular trials the original
    could not all run, into ``inconclusive`` (None: never).

    ``reference`` (any mapping with ``get`` and item assignment) memoises the
    original's runs under ``(reference_key, seed, trial, flavour, schedule,
    layout, races, extra scalars)``, for callers that check many candidates of one original (the
    evaluator): ``reference_key`` must identify the original module and the
    launch. A failure of the original is memoised too, and raised again on
    reuse (or the trial skipped, as without the memo).

    ``extra_launches`` allows the extra launches when the transformed module
    changed something (see the module doc: thread-serial, descending inputs,
    boundary scalars); off, only the regular and layout launches run.
    ``race_check`` turns on shared-memory race detection in the first
    regular launch when the transformed module changed a kernel that
    synchronises. ``read_probe`` allows the read-footprint reruns (see the
    module doc; with ``extra_launches``).

    ``budget`` (a :class:`~ptxopt.equivalence.budget.StepBudget`, shared by
    the caller's whole check): every run is limited to what is left of it,
    and the first run it stops, or the first launch when it is spent, ends
    the result ``inconclusive`` (``budget_spent``; ``error`` says where).
    A run of the original it stopped is not memoised in ``reference``.

    ``nc_reads`` compares the bytes the two kernels read through ``.nc`` on
    every launch compared (``result.nc_reads``, :mod:`ptxopt.equivalence.nc_reads`),
    from the read footprints of the runs the check makes anyway.

    ``cap``: an ``equal`` whose candidate adds ``ld.global.nc`` loads no
    analysis proves read-only (:func:`ptxopt.equivalence.assumptions.unproven_nc_loads`:
    ``nc_ld{assume_noalias=1}``) is ``inconclusive`` (``error``: "assumes
    noalias: " and why; ``assumption``: why), unless its ``.nc`` footprints
    lift the cap (:func:`ptxopt.equivalence.assumptions.nc_evidence`; they are
    recorded whenever they could). This interpreter runs one coherent memory:
    its ``equal`` cannot see the launch whose buffers alias. Only
    :mod:`ptxopt.equivalence.decision`, which applies the same cap to its
    :class:`~ptxopt.equivalence.decision.Decision`, passes ``cap=False``
    (``tests/equivalence/test_assumption_cap.py`` holds every other caller to it)."""
    po, pt = _as_program(original), _as_program(transformed)
    a = unproven_nc_loads(po.module, pt.module) if cap else None
    if a is not None and not options.get("nc_reads"):
        options["nc_reads"] = a.checkable(kernel or next(iter(a.functions)))
    res = _verify_uncapped(original, transformed, kernel, seeds, trials, programs=(po, pt), **options)
    if res.status == "mismatch" or (res.status == "error" and res.error_kind in _VALUE_FAULTS):
        _attribute_to_approximations(res, original, transformed, kernel, seeds, trials, po, pt, options)
    if a is not None and res.status == "equal":
        ev, why = nc_evidence(a, res)
        if ev is not None:
            res.notes.append(ev)
        else:
            res.status, res.error, res.assumption = "inconclusive", f"{ASSUMES_NOALIAS}: {why}", why
    if cap and res.status == "equal":
        why = precision_change(po.module, pt.module)
        if why is not None:
            res.status, res.error, res.assumption = "inconclusive", f"{CHANGES_PRECISION}: {why}", why
    return res


#: Candidate failures a value can cause (an index or a trip count computed from an approximate result).
_VALUE_FAULTS = frozenset({"fault", "barrier", "warp-sync", "trap", "step-limit", "error"})


def _attribute_to_approximations(res, original, transformed, kernel, seeds, trials, po, pt, options) -> None:
    """A ``mismatch`` (or a candidate failure a value can cause) between
    kernels that compute approximate float forms
    (``rcp.approx``, ``div.full``...: :data:`ptxopt.ptx.opcodes.APPROXIMATE_FLOAT_OPS`)
    may come from the interpreter's model of their undocumented bits
    (:func:`ptxopt.interp.fp.model_error`: the same form on the same inputs
    agrees, anything else need not). The check is run again with the
    correctly rounded stand-in; a difference that disappears there depends on
    bits only the hardware defines, so ``res`` becomes ``inconclusive``
    (:data:`~ptxopt.equivalence.assumptions.INEXACT`), naming the approximate
    instructions and the modelled difference. One that stays is a mismatch.
    The rerun memoises nothing (the memo holds modelled runs)."""
    from ptxopt.interp import fp

    approx = approximate_instructions(po.module) + [f"{w} (candidate)" for w in approximate_instructions(pt.module)]
    if not approx:
        return
    again = dict(options, reference=None, reference_key=None)
    with fp.exact_approximations():
        plain = _verify_uncapped(original, transformed, kernel, seeds, trials, programs=(po, pt), **again)
    if plain.status in ("mismatch", "error"):
        res.notes.append("the difference stays with correctly rounded stand-ins for the approximate float results")
        return
    mm = res.mismatch
    shown = (f"{mm.buffer}[{mm.index}] {mm.original} -> {mm.transformed} (seed {mm.seed}, {mm.flavour} inputs)"
             if mm is not None else f"the candidate fails: {res.error}")
    res.status, res.error_kind = "inconclusive", None
    res.error = (f"{INEXACT}: the outputs differ only where approximate float results (whose bits the PTX manual "
                 f"does not define) are modelled, e.g. {shown}; with correctly rounded stand-ins they agree: "
                 f"{'; '.join(approx[:4])}{' ...' if len(approx) > 4 else ''}")
    res.notes.append(f"the modelled difference: {shown}")
    res.mismatch = None


def _verify_uncapped(original, transformed, kernel: str | None = None, seeds=DEFAULT_SEEDS,
             trials: int = DEFAULT_TRIALS, *, spec=None, geometry: Geometry | None = None,
             max_steps: int | None = None, reference=None, reference_key=None, layouts: bool = True,
             assemble: bool = False, arch: str | None = None,
             min_coverage: float | None = None, original_text: str | None = None,
             transformed_text: str | None = None, extra_launches: bool = True,
             race_check: bool = True, launch=None, budget=None,
             read_probe: bool = True, nc_reads: bool = False, programs=None) -> VerifyResult:
    """:func:`verify` without the assumption cap (its doc). ``programs``: the
    two interpreter programs, when the caller built them."""
    if launch is not None:
        given = launch.interp_kwargs()
        spec, geometry = given.get("spec"), given.get("geometry")
    po, pt = programs or (_as_program(original), _as_program(transformed))
    if kernel is None:
        kernel = spec.entry if spec is not None else po.entry().name
    po.entry(kernel)
    pt.entry(kernel)
    if spec is None and geometry is None:
        spec = spec_for(po, kernel)
        if spec is None:
            raise LaunchError(f"no launch geometry for {kernel}: it matches no corpus kernel; give a "
                              "manifest entry or grid/block")
    if spec is not None:
        grid, block, shared = spec.launch.grid, spec.launch.block, spec.launch.shared_bytes
    else:
        grid, block, shared = geometry.grid, geometry.block, geometry.shared_bytes
    kw = {} if max_steps is None else {"max_steps": max_steps}
    seeds = tuple(int(s) for s in seeds)
    result = VerifyResult(kernel, "equal", 0, seeds=seeds, grid=tuple(grid), block=tuple(block),
                          shared_bytes=shared)
    if assemble:
        from ptxopt.toolchain.arch import resolve_arch

        result.arch = resolve_arch(po.module, arch)
        why = _assemble(original if original_text is None else original_text,
                        transformed if transformed_text is None else transformed_text, po, pt, result.arch)
        if why is not None:
            result.status, result.error, result.error_kind = "error", why, "ptxas"
            return result
    names = [p.arg for p in spec.params] if spec is not None else [p.name for p in po.kernel_params(kernel)]
    plan = [(seed, t, *TRIAL_PLAN[t % len(TRIAL_PLAN)], "separate", None) for seed in seeds
            for t in range(trials)]
    memo = pt.__dict__.setdefault("_changes_against", {})  # per original: the same for every launch contract
    hit = memo.get(id(po))
    sites = hit[1] if hit is not None and hit[0] is po else None
    if sites is None:
        sites = changes(po, pt)
        memo[id(po)] = (po, sites)
    if extra_launches and seeds and sites:
        plan += _extra_plan(po, pt, kernel, spec, sites, seeds[0], trials + len(LAYOUTS), geometry)
    # race detection: in the first regular launch, when something changed in a kernel that synchronises
    race_launch = (seeds[0], 0) if (race_check and extra_launches and seeds and trials and sites
                                    and (synchronises(po) or synchronises(pt))) else None
    if layouts and seeds:
        plan += [(seeds[0], trials + i, "random", "lockstep", lay, None) for i, lay in enumerate(LAYOUTS)]
    written: list[int] | None = None  # parameters the original wrote (first regular launch)
    first_failure = None
    regular_skipped = 0
    too_long: dict[str, int] = {}  # default-scalar choices the original ran out of steps with -> launch
    acc = {"written": {}, "branches": {}}
    executed_o: dict = {}  # changed-instruction coverage: what ran in the compared launches
    executed_t: dict = {}
    span_of = frozenset(names) if spec is None else frozenset()
    unaligned_failed = False
    projected = False  # a budget: the rest of the check projected once, from the first launch compared
    # read footprints (ptxopt.equivalence.footprint), for any candidate that changed something
    probe = bool(read_probe and extra_launches and sites)
    pnames = [p.name for p in po.kernel_params(kernel)]
    # .nc footprints (ptxopt.equivalence.nc_reads): the candidate's when asked; the original's too when it
    # has .nc loads, and always then when its runs are memoised, so a memoised run never lacks them
    nc_o = has_nc_loads(po.module) and (nc_reads or reference is not None)
    tags_o, labels_o = loop_tags(po, kernel) if probe or nc_o else ({}, {})
    tags_t, labels_t = loop_tags(pt, kernel) if probe else ({}, {})
    if nc_o:
        tags_o = with_nc_tags(tags_o, po, coherent=True)
    if nc_reads:
        tags_t = with_nc_tags(tags_t, pt)
        result.nc_reads = ncr = NcReads()
    probes_left = MAX_READ_PROBES
    masked_note = None  # the first launch whose masked reads differ (footprint.masked_difference)
    shared_note = None  # the first launch whose shared-memory reads differ (footprint.shared_read_difference)
    for at, (seed, t, flavour, schedule, layout, extra) in enumerate(plan):
        if layout == "unaligned-inputs" and not unaligned_failed:
            continue  # only when the original cannot take every buffer less aligned
        run_seed = seed * 1000 + t
        races = (seed, t) == race_launch and layout == "separate"  # shared-memory race detection here
        launch = {"seed": seed, "trial": t, "flavour": flavour, "schedule": schedule, "layout": layout}
        if races:
            launch["races"] = "detected"  # shared-memory race detection ran in this launch
        if extra is not None:  # not a regular launch: the original failing here skips it
            launch["extra"] = extra["kind"] + (f": {extra['what']}" if extra.get("what") else "")
        result.launches.append(launch)
        defaulted: list[str] = []
        choice = None
        if spec is not None:
            args = make_args(spec, run_seed, flavour)
            for i, v in (extra or {}).get("scalars", {}).items():
                args[i] = v
        else:
            if layout == "separate" and not extra:
                choice = SCALAR_PLAN[t % len(SCALAR_PLAN)]
            else:  # the first default the original could run with
                choice = next((c for c in SCALAR_PLAN if c not in too_long), SCALAR_PLAN[0])
            args, defaulted = _args_for_geometry(po, kernel, geometry, run_seed, flavour, choice)
            for i, v in (extra or {}).get("scalars", {}).items():
                args[i] = v  # boundary trip counts
        launch["scalars"] = _scalar_values(names, args)
        if defaulted and choice in too_long:
            # the original ran out of steps with this default once: do not wait for it again
            launch["skipped"] = f"the original ran out of steps with these scalars in launch {too_long[choice]}"
            regular_skipped += layout == "separate" and not extra
            continue
        if layout != "separate":
            args, why = _apply_layout(layout, po, kernel, args, written or [])
            if args is None:
                launch["skipped"] = f"not applicable: {why}"
                continue
            launch["buffers"] = {names[i]: (f"alias of {names[a.of]}" + (f" +{a.offset} bytes" if a.offset else "")
                                            if isinstance(a, Alias) else f"{a.offset} bytes past an aligned base")
                                 for i, a in enumerate(args) if isinstance(a, (Alias, Placed))}
        # the extra launches' scalars are part of the key: a trip-count launch's values come from the loops
        # the candidate changed, so two candidates' launches of one number may set different scalars
        key = (reference_key, seed, t, flavour, schedule, layout) + (("races",) if races else ()) + (
            tuple(sorted((extra or {}).get("scalars", {}).items())),)
        ref = reference.get(key) if reference is not None else None
        where = f"launch {t} ({flavour} inputs, {schedule} schedule, {layout} buffers)"
        if budget is not None and budget.spent:
            return _budget_stop(result, budget, "before " + where, acc, span_of, sites, executed_o, executed_t)
        # reads recorded on every separate-buffer launch (masked-read counts: every launch, the boundary trip
        # counts above all); footprints compared and spiked only while probes are left
        record = probe and layout == "separate"
        want_reads = record and probes_left > 0
        reads_o = record or nc_o
        kw_o, bound = _budgeted(kw if kw or not defaulted else {"max_steps": DEFAULT_SCALAR_STEPS}, budget)
        if ref is None or (not isinstance(ref, InterpError) and ((reads_o and ref[6] is None)
                                                                 or (record and ref[7] is None))):
            copy = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
            try:
                ro = run_kernel(po, kernel, grid, block, copy, shared, seed=run_seed, schedule=schedule,
                                coverage=True, races=races, reads=tags_o if reads_o else False,
                                shared_reads=record, **kw_o)
                ref = (ro.buffers, ro.steps, ro.globals, ro.coverage, ro.races, ro.reads, ro.masked,
                       ro.shared_reads)
                if budget is not None:
                    budget.spend(ro.steps)
            except InterpError as e:
                if bound and isinstance(e, StepLimit):  # the budget, not the kernel: no verdict, not memoised
                    budget.spend(kw_o["max_steps"])
                    return _budget_stop(result, budget, "the original in " + where, acc, span_of, sites,
                                        executed_o, executed_t)
                if budget is not None:
                    budget.spend(getattr(e, "steps", 0))  # a failing run's steps count too
                ref = type(e)(f"original kernel: {e}")
            if reference is not None:
                reference[key] = ref
        if isinstance(ref, InterpError):
            if layout == "separate" and not defaulted and not extra:
                raise ref
            why = (f"the original fails with this layout ({ref.kind})" if layout != "separate" else
                   f"the original fails in this extra launch ({ref.kind})" if extra else
                   f"the original fails with the default {', '.join(defaulted)} ({ref.kind})")
            launch["skipped"] = f"{why}: {ref}"
            first_failure = first_failure or ref
            if defaulted and isinstance(ref, StepLimit):
                too_long.setdefault(choice, t)
            unaligned_failed |= layout == "unaligned"
            regular_skipped += layout == "separate" and not extra
            continue
        ref_buffers, ref_steps, ref_globals, ref_cov, ref_races, ref_reads, ref_masked, ref_shared = ref
        if written is None and layout == "separate":
            stored = ref_cov["written"]
            written = [i for i, p in enumerate(po.kernel_params(kernel))
                       if p.name in stored and stored[p.name].any()]
        if layout == "separate":
            _merge_coverage(acc, ref_cov)
        merge_executed(executed_o, ref_cov.get("executed"))
        probe_args = [a.copy() if isinstance(a, np.ndarray) else a for a in args] if want_reads else None
        kw_t, bound = _budgeted(kw, budget)
        try:
            rt = run_kernel(pt, kernel, grid, block, args, shared, seed=run_seed, schedule=schedule,
                            executed=True, races=races, reads=tags_t if record or nc_reads else False,
                            shared_reads=record, **kw_t)
            if budget is not None:
                budget.spend(rt.steps)
        except InterpError as e:
            if bound and isinstance(e, StepLimit):  # the budget stopped the candidate: no verdict
                budget.spend(kw_t["max_steps"])
                return _budget_stop(result, budget, "the candidate in " + where, acc, span_of, sites, executed_o,
                                    executed_t)
            result.status = "error"
            result.error = (f"transformed kernel (seed {seed}, {flavour} inputs, {schedule} schedule, "
                            f"{layout} buffers): {e}")
            result.error_kind = e.kind
            result.trials += 1
            result.coverage = _coverage(acc, span_of, sites, executed_o, executed_t)
            return result
        result.trials += 1
        if nc_reads:
            ncr.add(ref_reads if nc_o else None, rt.reads, rt.nc_unrecorded, where)
        merge_executed(executed_t, rt.coverage["executed"])
        result.steps = (ref_steps, rt.steps)
        mm = compare_buffers(names, ref_buffers, rt.buffers, seed, flavour, schedule)
        if mm is None:
            mm = compare_globals(po, pt, ref_globals, rt.globals, seed, flavour, schedule)
        diff = footprint_difference(ref_reads, rt.reads, pnames, labels_o, labels_t) if want_reads and mm is None \
            else ({}, {})
        if record and mm is None and masked_note is None:
            masked_note = masked_difference(ref_masked, rt.masked, labels_o, labels_t)
            if masked_note:
                launch["masked_reads"] = masked_note
                masked_note = f"{masked_note} in {where}"
        if record and mm is None and shared_note is None:
            shared_note = shared_read_difference(ref_shared, rt.shared_reads)
            if shared_note:
                launch["shared_reads"] = shared_note
                shared_note = f"{shared_note} in {where}"
        if (diff[0] or diff[1]) and budget is not None:
            # the spiked reruns are outside the budget's projection: a budgeted check (the Triton hook)
            # does not run them, and a read difference it cannot settle is no 'equal'
            result.status = "inconclusive"
            result.error = (f"the two kernels read different elements in {where}; the spiked reruns that "
                            "would settle it are not run under a step budget")
            result.coverage = _coverage(acc, span_of, sites, executed_o, executed_t)
            return result
        if diff[0] or diff[1]:
            probes_left -= 1
            mm, failed = _spike_probe(po, pt, kernel, spec, grid, block, shared, probe_args, diff, names, pnames,
                                      run_seed, schedule, kw_o, kw, seed, flavour, launch,
                                      (tags_o if nc_o else False, tags_t, ncr) if nc_reads else None)
            if failed is not None:
                result.status, result.error_kind = "error", failed.kind
                result.error = (f"transformed kernel (seed {seed}, {flavour} inputs with the elements only one "
                                f"kernel reads spiked, {schedule} schedule): {failed}")
                result.trials += 1
                result.coverage = _coverage(acc, span_of, sites, executed_o, executed_t)
                return result
        if mm is not None:
            mm.layout, mm.trial = layout, t
            result.status = "mismatch"
            result.mismatch = mm
            result.coverage = _coverage(acc, span_of, sites, executed_o, executed_t)
            return result
        if races and rt.races[0]:
            if ref_races is not None and ref_races[0]:
                result.notes.append(f"launch {t}: the original races on shared memory too ({ref_races[1][0]}): "
                                    "races not compared")
            else:
                result.status, result.error_kind = "error", "race"
                result.error = (f"transformed kernel (seed {seed}, {flavour} inputs, {schedule} schedule): "
                                f"{rt.races[0]} shared-memory data race{'s' if rt.races[0] != 1 else ''} the "
                                f"original does not have, first: {rt.races[1][0]}")
                result.coverage = _coverage(acc, span_of, sites, executed_o, executed_t)
                return result
        if budget is not None and not projected:
            projected = True
            base = max(ref_steps, rt.steps) / _schedule_factor(schedule, grid, block)
            need = _projection(plan[at + 1:], base, grid, block)
            if budget.used + need > budget.steps:  # it cannot finish: stop before spending the rest
                return _budget_stop(result, budget, f"after launch {t}: the launches left would need about "
                                    f"{need:.0f} more steps", acc, span_of, sites, executed_o, executed_t)
    if result.trials == 0 and first_failure is not None:
        raise first_failure
    result.coverage = c = _coverage(acc, span_of, sites, executed_o, executed_t)
    skipped = [la for la in result.launches if "skipped" in la]
    if skipped:
        result.notes.append(f"{len(skipped)} of {len(result.launches)} launches skipped (see launches)")
    if c.changed_not_run:
        result.status = "inconclusive"
        n = c.changed_instructions - c.changed_ran
        result.error = (f"{n} changed instruction{'s' if n != 1 else ''} never ran under this contract, so no "
                        f"launch tested {'them' if n != 1 else 'it'}: {'; '.join(c.changed_not_run)}")
    elif masked_note is not None:
        result.status = "inconclusive"
        result.error = (f"{masked_note}: the extra or missing reads see only values the program fixes "
                        "(zero-fill, a masked register), which no input varies, so equal outputs do not "
                        "show the two kernels agree (a -0.0 sum plus a masked +0.0 is +0.0)")
    elif shared_note is not None:
        result.status = "inconclusive"
        result.error = (f"{shared_note}: a shared-memory read moved onto another element drops a value no "
                        "input buffer holds (a reduction tree's partial), which no spike can reach, so equal "
                        "outputs do not show the two kernels agree")
    elif min_coverage is not None:
        if regular_skipped:
            result.status = "inconclusive"
            result.error = (f"the original fails on {regular_skipped} of the regular launches under the "
                            "default scalars: give the launch contract (--scalar NAME=VALUE)")
        elif result.coverage.output_bytes < min_coverage:
            c = result.coverage
            result.status = "inconclusive"
            result.error = (f"the launches stored only {c.written_bytes} of the {c.output_size} bytes of the "
                            f"buffers the kernel writes ({c.output_bytes:.0%} < {min_coverage:.0%}): "
                            "a larger or different launch contract would exercise more")
    return result


def _schedule_factor(schedule: str, grid, block) -> float:
    """Steps of a launch under ``schedule`` per step of the same launch in
    lockstep (:data:`ptxopt.interp.launcher.SCHEDULES`): each warp issues on its
    own (``warps``), each thread of the first and last CTA (``threads``)."""
    threads = int(np.prod(block))
    warps = (threads + 31) // 32
    if schedule.startswith("warps"):
        return float(warps)
    if schedule.startswith("threads"):
        ctas = int(np.prod(grid))
        serial = min(2, ctas)
        return (serial * threads + (ctas - serial) * warps) / ctas
    return 1.0


def _projection(rest: list, lockstep_steps: float, grid, block) -> float:
    """Steps the launches ``rest`` of a plan would take, original and
    candidate, from one launch's lockstep-equivalent count. A projection
    (scalars and inputs change the work): it only decides when a budget
    stops a check early, never a verdict. The layout launch that runs only
    when another failed (``unaligned-inputs``) is not counted."""
    return sum(2 * lockstep_steps * _schedule_factor(r[3], grid, block) for r in rest
               if r[4] != "unaligned-inputs")


def _budgeted(kw: dict, budget) -> tuple[dict, bool]:
    """``kw`` with ``max_steps`` lowered to what is left of ``budget``, and
    whether the budget is what binds the run."""
    if budget is None:
        return kw, False
    from ptxopt.interp.launcher import DEFAULT_MAX_STEPS

    steps, bound = budget.limit(kw.get("max_steps", DEFAULT_MAX_STEPS))
    return ({**kw, "max_steps": steps, "strict_steps": True} if bound else kw), bound


def _budget_stop(result: VerifyResult, budget, where: str, acc, span_of, sites, executed_o, executed_t
                 ) -> VerifyResult:
    """End ``result`` ``inconclusive``: the check's step budget is spent (nothing differed so far)."""
    result.status, result.budget_spent = "inconclusive", True
    result.error = budget.note(where)
    result.coverage = _coverage(acc, span_of, sites, executed_o, executed_t)
    return result


__all__ = ["verify", "VerifyResult", "Mismatch", "Coverage", "Geometry", "AssemblyError", "compare_buffers",
           "compare_globals", "np_dtype", "SCALAR_PLAN", "LAYOUTS", "TRIAL_PLAN",
           "DEFAULT_SEEDS", "DEFAULT_TRIALS", "DEFAULT_MIN_COVERAGE"]  # the last three: see trial_budget
