"""Every bound counts the whole launch: the loop the performance launch runs is walked with its trips.

nvcc guards a K loop with ``if (k > 0)``; in SASS that is a forward branch the loop profile gives no
count for, and the static fallback ("not taken") took the path that skips the loop, so the estimate
ignored the trips it printed and did not move with K.  The guard of a loop the profile says ran is now
taken towards it (:func:`ptxopt.sim.trips.trip_counts_from_loop_profile`).  ESTIMATES; ptxas runs."""

from __future__ import annotations

from pathlib import Path

from ptxopt.equivalence.launch_contract import resolve_contracts, resolve_performance
from ptxopt.measure.loop_slice import trip_counts_for
from ptxopt.ptx.parser import parse_bytes
from ptxopt.sim import decode, simulate
from ptxopt.toolchain import compile_ptx, disassemble

PTX = Path(__file__).resolve().parents[2] / "benchmarks" / "outside_kernels" / "sgemm_regtile.ptx"


def _walk(k: int):
    text = PTX.read_text()
    compiled = compile_ptx(text, "sm_89")
    program = decode(disassemble(compiled.cubin), "sgemm_regtile")
    perf = resolve_performance(str(PTX), scalars={"sgemm_regtile_param_4": k})
    check = resolve_contracts(str(PTX)).items[0]
    trips, source, _ = trip_counts_for(program, parse_bytes(text.encode(), "t"), "sgemm_regtile",
                                       check=check.interp_kwargs(), performance=perf)
    assert source == "performance launch"
    return simulate(program, compiled, trips)


def test_the_k_loop_is_walked_with_its_trips():
    small, big = _walk(256), _walk(1024)  # 32 and 128 trips of the 8-wide K step
    assert small.fallback is None and big.fallback is None
    # the loop body is hundreds of instructions: 4x the trips is close to 4x the work
    assert big.issued_instructions > 3.5 * small.issued_instructions
    assert small.issued_instructions > 32 * 100
