"""The ``sim`` backend: a SASS-level cycle *estimate* without a GPU.

ptxas already decided the schedule: every Volta+ SASS instruction carries
its stall count, the dependency barriers (scoreboards) it sets, and the ones
it waits on.  This package replays those decisions for one warp, with a
per-architecture table of memory latencies for the instructions whose
latency ptxas cannot know (loads from L1/L2/local memory, special registers,
...).  See :mod:`ptxopt.sim.model` for exactly what is and is not modelled,
:mod:`ptxopt.sim.latency` for the tables and their sources, and
:mod:`ptxopt.sim.trips` for branch outcomes and the interpreter hook.

Library use::

    from ptxopt.sim import estimate
    r = estimate(ptx_text, "sm_89")          # compiles with ptxas, disassembles, simulates
    r.cycles, r.fallback, r.notes            # an estimate; fallback says how loops were counted
    print(estimate(ptx_text, explain=True).explain(limit=50))

    from ptxopt.sim import simulate          # for an already compiled cubin
    r = simulate(disassemble(compiled.cubin), compiled)

Command line: ``python -m ptxopt.sim KERNEL.ptx [--arch sm_89] [--explain]``.
"""

from ptxopt.sim.sass_decode import Program, decode
from .latency import LATENCIES, ArchLatencies, latencies_for
from .model import DEFAULT_LOOP_TRIPS, SimResult, TimelineEntry, estimate, simulate
from .trips import BranchSite, LoopCount, SassLoop, branch_sites, sass_loops, trip_counts_from_loop_profile

__all__ = [
    "estimate",
    "simulate",
    "SimResult",
    "TimelineEntry",
    "ArchLatencies",
    "LATENCIES",
    "latencies_for",
    "DEFAULT_LOOP_TRIPS",
    "Program",
    "decode",
    "BranchSite",
    "SassLoop",
    "LoopCount",
    "branch_sites",
    "sass_loops",
    "trip_counts_from_loop_profile",
]
