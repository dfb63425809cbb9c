"""Published WAR (read-barrier) latencies of memory instructions in the sim walk.

Source: Huerta et al., MICRO '25, Table 2 (RTX A6000); ptxopt.sim.latency.MEASURED_WAR.  Every
cycle figure here is a model ESTIMATE.
"""

from __future__ import annotations

import dataclasses

import pytest

from ptxopt.sim.latency import LATENCIES, MEASURED_WAR, war_latency


@pytest.mark.parametrize("opcode, operands, cycles", [
    ("LDG.E", "R7, [R10.64]", 11),  # regular address register
    ("LDG.E.128", "R4, desc[UR4][R2.64+0x10]", 11),  # loads: any width, released at address time
    ("LDG.E", "R2, desc[UR4][UR6.64]", 9),  # uniform address
    ("STG.E", "[R2.64], R23", 14),
    ("STG.E.64", "[R2.64+0x8], R4", 16),  # +2: the stored value is read too
    ("STG.E.128", "[R2.64+0x10], R4", 20),  # +6
    ("STS", "[UR4], R2", 10),
    ("LDC", "R2, c[0x0][R3]", 29),
    ("LDC", "R2, c[0x0][0x10]", 10),
])
def test_table_2_figures(opcode, operands, cycles):
    assert war_latency(opcode, operands) == cycles


def test_not_a_memory_instruction_keeps_the_flat_estimate():
    assert war_latency("FFMA", "R1, R2, R3, R4") is None
    assert war_latency("MUFU.EX2", "R1, R2") is None
    assert war_latency("STL", "[R1+0x4], R5") is None  # local memory: not measured, flat estimate
    assert war_latency("LDL", "R4, [R1+0x8]") is None


def test_store_width_adds_what_the_paper_says():
    for space in ("store_global", "store_shared"):
        for rtype in ("uniform", "regular"):
            base = MEASURED_WAR[(space, rtype, 4)]
            assert MEASURED_WAR[(space, rtype, 8)] - base == 2
            assert MEASURED_WAR[(space, rtype, 16)] - base == 6


def test_the_walk_uses_it_where_the_table_says_so():
    """gemm_tile_8x8x8 has address registers rewritten soon after their LDG: the published WAR of a
    regular-address load (11) is later than the flat estimate (8), so the walk gets longer; with the
    switch off it is the flat estimate again."""
    from ptxopt.kernels.corpus import get
    from ptxopt.sim import simulate
    from ptxopt.toolchain import compile_ptx, disassemble

    spec = get("gemm_tile_8x8x8")
    compiled = compile_ptx(spec.ptx_text(), "sm_89")
    listing = disassemble(compiled.cubin)
    lat = dataclasses.replace(LATENCIES["sm_89"], measured_war=False)
    flat = simulate(listing, compiled, kernel=spec.entry, latencies=lat)
    measured = simulate(listing, compiled, kernel=spec.entry, latencies=dataclasses.replace(lat, measured_war=True))
    assert measured.cycles > flat.cycles
    assert measured.waits["operand read"] > flat.waits["operand read"]
