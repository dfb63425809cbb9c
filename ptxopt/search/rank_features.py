"""What a learned ranker sees of a state and of each action out of it.

A ranker scores "how much does appending this pass gain here" for every
legal action of a state, and only the best-scoring few are measured
(:mod:`ptxopt.search.guided`). Three kinds of input decide that:

* the state's static PTX features (:meth:`State.observation`: instruction
  mix, loads/stores, register pressure estimate, active pass families);
* its *context*, what decides throughput and comes from the state's own
  evaluation, already paid for: the objective, the performance launch
  (threads per block, blocks, dynamic shared bytes), ptxas registers and
  spills, SASS instruction count, and the occupancy that follows from
  registers and launch (:func:`ptxopt.sim.occupancy.occupancy`) with its
  limiter; and the sim's throughput bounds over the estimate (LSU issue,
  L1, L2, DRAM, the arithmetic floor: 1.0 is the bound that binds; none
  near 1: latency or issue binds), read from the many-warp note the sim
  writes into the state's result (:func:`bound_context`: an
  :class:`~ptxopt.evaluate.EvalResult` carries no bound field, and
  recomputing them would cost a model run per state);
* per-action features of the *child*, which come only from applying the
  pass (the action mask applies every pass anyway: no ptxas, no sim): how
  the child's static features differ from the state's.

Everything is plain JSON-able numbers so that trajectories can record it
(:mod:`ptxopt.search.trajectory`: ``context`` and ``action_features``) and
old trajectories without it stay usable: a missing value is NaN, which the
ranker's trees route on their own.
"""

from __future__ import annotations

import math
import re
from functools import lru_cache

import numpy as np

#: The context slots (:func:`state_context`), in order.
CONTEXT_NAMES: tuple[str, ...] = (
    "objective_throughput", "block_threads", "grid_blocks", "dynamic_shared_bytes", "registers",
    "spill_bytes", "sass_instructions", "occupancy", "blocks_per_sm",
    "limited_by_warps", "limited_by_blocks", "limited_by_registers", "limited_by_shared",
    "waves", "bound_lsu", "bound_l1", "bound_l2", "bound_dram", "bound_arithmetic", "binds_memory",
    "binds_arithmetic", "binds_latency_or_issue",
)

#: The bound slots of :data:`CONTEXT_NAMES` (each a bound's cycles over the estimate's) and the
#: one-hot of what binds (a bound within :data:`BINDS` of the estimate binds).
BOUND_NAMES: tuple[str, ...] = ("bound_lsu", "bound_l1", "bound_l2", "bound_dram", "bound_arithmetic")
BINDS = 0.98

#: Static features whose change from state to child is an action feature (names of
#: :data:`ptxopt.analysis.features.FEATURE_NAMES`).
DELTA_FEATURES: tuple[str, ...] = (
    "n_instructions", "n_load", "n_store", "n_ld_global", "n_st_global", "n_ld_global_v4", "n_ld_global_v2",
    "n_ld_shared", "n_barrier", "maxnreg", "ilp", "critical_path_latency_max", "regp_max_live", "regp_total32",
)

#: The action-feature slots (:func:`action_features`), in order.
ACTION_FEATURE_NAMES: tuple[str, ...] = ("changed", *(f"delta:{n}" for n in DELTA_FEATURES))

#: Features derived from the action's parameters, the context and the action features
#: (:func:`derived_features`): computed when a row is built, so recorded trajectories get them too.
DERIVED_NAMES: tuple[str, ...] = (
    "register_cap", "register_cap_minus_registers", "occupancy_at_cap_minus_occupancy",
    "relative:n_instructions", "relative:n_ld_global", "relative:critical_path_latency_max",
)

#: 32-bit registers per SM (every supported architecture): what a launch-bounds minimum leaves per thread.
_REGISTER_FILE = 65536

_LIMITERS = ("warps", "blocks", "registers", "shared memory")


def _launch_numbers(perf) -> tuple[float, float, float]:
    if perf is None:
        return math.nan, math.nan, math.nan
    block, grid = getattr(perf, "block", None), getattr(perf, "grid", None)
    threads = float(np.prod(block)) if block else math.nan
    blocks = float(np.prod(grid)) if grid else math.nan
    return threads, blocks, float(getattr(perf, "shared_bytes", 0) or 0)


def state_context(state, result) -> dict:
    """The context of ``state`` whose evaluation is ``result`` (an EvalResult, or None: unknown)."""
    threads, blocks, shared = _launch_numbers(state.binding[0] if state.binding else None)
    ctx = {n: math.nan for n in CONTEXT_NAMES}
    ctx.update(block_threads=threads, grid_blocks=blocks, dynamic_shared_bytes=shared)
    if result is None:
        return ctx
    ctx["objective_throughput"] = {"throughput": 1.0, "latency": 0.0}.get(result.objective or "", math.nan)
    regs = result.registers
    ctx["registers"] = float(regs) if regs is not None else math.nan
    if result.spill_store_bytes is not None or result.spill_load_bytes is not None:
        ctx["spill_bytes"] = float((result.spill_store_bytes or 0) + (result.spill_load_bytes or 0))
    if result.sass_instructions is not None:
        ctx["sass_instructions"] = float(result.sass_instructions)
    if regs and not math.isnan(threads):
        try:
            from ptxopt.sim.occupancy import occupancy

            occ = occupancy(result.arch, int(threads), int(regs), int(shared))
        except (ValueError, KeyError, TypeError):
            occ = None
        if occ is not None:
            ctx["occupancy"] = float(occ.occupancy())
            ctx["blocks_per_sm"] = float(occ.blocks_per_sm)
            for lim, name in zip(_LIMITERS, ("limited_by_warps", "limited_by_blocks", "limited_by_registers",
                                             "limited_by_shared")):
                ctx[name] = 1.0 if occ.limited_by == lim else 0.0
    ctx.update(bound_context(result.notes, result.cycles))
    return ctx


_MANY_WARPS = re.compile(r"many warps .*?(\d+) wave\(s\).*?per wave: LSU (\d+), L1 (\d+), L2 (\d+) cycles; "
                         r"DRAM for the launch (\d+) cycles")
_ARITHMETIC = re.compile(r"arithmetic floor: .*? = ([\d,]+) cycles")


def bound_context(notes, cycles) -> dict:
    """The bound slots from a sim result's notes (the many-warp note: per-wave LSU, L1 and L2 cycles, the
    launch's DRAM cycles, the arithmetic floor), each over ``cycles``; {} when the notes hold no many-warp
    estimate (latency objective, another backend, a note this parser does not know: unknown, not zero)."""
    try:
        text = next((n for n in notes or () if n.startswith("many warps")), None)
        m = _MANY_WARPS.search(text or "")
        if m is None or not cycles or cycles <= 0:
            return {}
        waves, lsu, l1, l2, dram = (float(x) for x in m.groups())
        a = _ARITHMETIC.search(text)
        arith = float(a.group(1).replace(",", "")) if a else 0.0
        out = dict(zip(BOUND_NAMES, (waves * lsu / cycles, waves * l1 / cycles, waves * l2 / cycles, dram / cycles,
                                     arith / cycles)))
        top = max(out, key=out.get)
        binds = out[top] >= BINDS
        out.update(waves=waves, binds_memory=float(binds and top != "bound_arithmetic"),
                   binds_arithmetic=float(binds and top == "bound_arithmetic"), binds_latency_or_issue=float(not binds))
        return out
    except (ValueError, TypeError, StopIteration):
        return {}


def _index() -> list[int]:
    from ptxopt.analysis.features import FEATURE_NAMES

    return [FEATURE_NAMES.index(n) for n in DELTA_FEATURES]


def action_features(state, child) -> list[float]:
    """How applying the action changes the module (``child``: the legal move's state)."""
    idx = _index()
    a, b = np.asarray(state.features, dtype=float), np.asarray(child.features, dtype=float)
    return [1.0, *(float(b[i] - a[i]) for i in idx)]


def register_cap(action: str, block_threads: float) -> float:
    """The per-thread register limit ``action`` asks ptxas for (NaN: none): ``maxnreg``'s count, or what
    ``launch_bounds``' minimum blocks per SM leave of the register file at the launch's block."""
    try:
        from ptxopt.search.actions import action_pass

        p = action_pass(action)
    except Exception:  # an action this ptxopt does not know (a ranker from elsewhere): no cap known
        return math.nan
    n = getattr(p, "n", None)
    if type(p).__name__ == "MaxNReg" and n:
        return float(n)
    minblocks = getattr(p, "minblocks", None)
    if type(p).__name__ == "LaunchBounds" and minblocks and block_threads and not math.isnan(block_threads):
        per_thread = _REGISTER_FILE // int(block_threads * minblocks)
        return float(min(255, max(16, per_thread // 8 * 8)))
    return math.nan


def outcome_class(action: str, ctx: dict) -> str | None:
    """A key shared by actions predicted to give ptxas the same input, so that one measurement tells the
    outcome of all (None: no prediction): register-cap actions (``maxnreg``, ``launch_bounds`` with a
    minimum of blocks) asking for the same per-thread limit at the state's launch (:func:`register_cap`,
    ``ctx["block_threads"]``). ptxas allocates under that limit whichever directive set it: at every
    recorded state they agree (347 pairs, 0 differ). Different caps above the registers a state uses are
    not one class: ptxas schedules for the room a cap leaves (15% of recorded states tell them apart)."""
    cap = register_cap(action, ctx.get("block_threads", math.nan))
    return None if math.isnan(cap) else f"register cap {cap:g}"


@lru_cache(maxsize=None)
def pass_kind(action: str) -> str | None:
    """The pass ``action`` appends, without its parameters (``maxnreg_64`` and ``maxnreg_255``: ``MaxNReg``;
    None: not a pass action this ptxopt knows). Variants of one pass mostly agree: at the recorded states
    where one variant left the cycles exactly as they were, another variant of the same pass gained >= 0.1%
    at 114 of 12,672 pairs (0.9%); where one variant gained, another gained at 594 of 1,035 pairs (so a
    second variant tells little the first did not: :func:`ptxopt.search.guided.demote_repeats` orders by it)."""
    try:
        from ptxopt.search.actions import action_pass

        return type(action_pass(action)).__name__
    except Exception:  # stop, or an action from another ptxopt: no kind known
        return None


def derived_features(action: str, static: dict, ctx: np.ndarray, afeat: np.ndarray,
                     arch: str = "sm_89") -> np.ndarray:
    """:data:`DERIVED_NAMES` for one action: how its register cap meets the state's ptxas registers and
    occupancy, and its static changes relative to the state's size. ``static``: name -> state value."""
    c = dict(zip(CONTEXT_NAMES, ctx))
    threads, regs, occ = c["block_threads"], c["registers"], c["occupancy"]
    cap = register_cap(action, threads)
    out = dict.fromkeys(DERIVED_NAMES, math.nan)
    out["register_cap"] = cap
    if not math.isnan(cap) and not math.isnan(regs):
        out["register_cap_minus_registers"] = cap - regs
        if not math.isnan(occ) and not math.isnan(threads):
            try:
                from ptxopt.sim.occupancy import occupancy

                shared = c["dynamic_shared_bytes"]
                out["occupancy_at_cap_minus_occupancy"] = occupancy(
                    arch, int(threads), int(min(regs, cap)), 0 if math.isnan(shared) else int(shared)).occupancy() - occ
            except (ValueError, KeyError, TypeError):
                pass
    deltas = dict(zip(ACTION_FEATURE_NAMES, afeat))
    for name in ("n_instructions", "n_ld_global", "critical_path_latency_max"):
        base = static.get(name, math.nan)
        d = deltas.get(f"delta:{name}", math.nan)
        out[f"relative:{name}"] = d / base if base and not math.isnan(base) else math.nan
    return np.array([out[n] for n in DERIVED_NAMES], dtype=float)


def context_vector(ctx: dict | None) -> np.ndarray:
    ctx = ctx or {}
    return np.array([_num(ctx.get(n)) for n in CONTEXT_NAMES], dtype=float)


def action_vector(feats) -> np.ndarray:
    if not feats or len(feats) != len(ACTION_FEATURE_NAMES):
        return np.full(len(ACTION_FEATURE_NAMES), math.nan)
    return np.array([_num(x) for x in feats], dtype=float)


def _num(x) -> float:
    try:
        return math.nan if x is None else float(x)
    except (TypeError, ValueError):
        return math.nan
