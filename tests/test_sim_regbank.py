"""Register-bank read conflicts in the single-warp walk (issue 27), ESTIMATES.

The rule (ptxopt/sim/regbank.py, sourced there): two banks (register index
mod 2), one warp register per bank per cycle, reuse-cache hits read nothing;
an arithmetic instruction holds the read stage for max(reads per bank) cycles.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import pytest

from ptxopt.sim.latency import LATENCIES
from ptxopt.sim.regbank import read_cycles


@dataclass(frozen=True)
class Ins:
    opcode: str
    operands: str

    @property
    def base_opcode(self):
        return self.opcode.split(".")[0]

    @property
    def modifiers(self):
        return tuple(self.opcode.split(".")[1:])


def cycles(*lines, targets=()):
    return read_cycles([Ins(*ln.split(" ", 1)) for ln in lines], frozenset(targets))


def test_two_sources_in_one_bank_take_two_cycles():
    # the NVIDIA-forum RTX A4000 pattern: R10 and R4 both even -> ~55% of the FP32 peak
    assert cycles("FFMA R4, R9, R10, R4") == [2]
    assert cycles("FFMA R4, R9, R11, R4") == [2]  # R9, R11 odd
    assert cycles("FFMA R4, R9, R10, RZ") == [1]  # RZ reads nothing
    assert cycles("FFMA R4, R8, R10, R12") == [3]


def test_reuse_cache_hits_read_no_bank():
    # with R9.reuse, R10.reuse only R_c is read: ~95% of peak on the A4000
    got = cycles("FFMA R4, R9.reuse, R10.reuse, R4", "FFMA R5, R9.reuse, R10.reuse, R5",
                 "FFMA R6, R9, R10, R6")
    assert got == [2, 1, 1]
    # a hit needs the same register in the same operand slot
    assert cycles("FFMA R4, R9.reuse, R10, R4", "FFMA R5, R10, R9, R6") == [2, 2]


def test_branch_targets_and_other_instructions_empty_the_cache():
    assert cycles("FFMA R4, R8.reuse, R10, R1", "FFMA R5, R8, R10, R1", targets=(1,)) == [2, 2]
    assert cycles("FFMA R4, R8.reuse, R10, R1", "LDG.E R2, [R6.64]", "FFMA R5, R8, R10, R1") == [2, 0, 2]


@pytest.mark.parametrize("line", ["LDG.E R2, [R4.64]", "STG.E [R2.64], R4", "IMAD.WIDE R2, R4, R6, R8",
                                  "HMMA.16816.F32 R4, R8, R12, R4", "DFMA R2, R4, R6, R8", "MOV R2, R4"])
def test_only_32_bit_arithmetic_is_modelled(line):
    assert cycles(line) == [0]


def test_tables_say_where_the_mechanism_is_sourced():
    assert LATENCIES["sm_89"].register_banks == LATENCIES["sm_80"].register_banks == 2
    assert LATENCIES["sm_90"].register_banks == 0  # no published Hopper measurement


def test_conflicts_lengthen_the_walk_toward_the_published_baseline():
    """gemm_tile_4x4x4 (same 40 registers as the study's ptxas): published 696 cycles on an L4.
    The walk without the mechanism (the model before issue 27) is 552; with it the estimate must
    be later, yet not past the measurement (the mechanism alone does not explain the gap)."""
    from ptxopt.corpus import get
    from ptxopt.sim import simulate
    from ptxopt.toolchain import compile_ptx, disassemble

    spec = get("gemm_tile_4x4x4")
    compiled = compile_ptx(spec.ptx_text(), "sm_89")
    listing = disassemble(compiled.cubin)
    off = simulate(listing, compiled, kernel=spec.entry,
                   latencies=dataclasses.replace(LATENCIES["sm_89"], register_banks=0))
    on = simulate(listing, compiled, kernel=spec.entry)
    assert off.cycles < on.cycles <= 696
    assert abs(on.cycles / 696 - 1) < abs(off.cycles / 696 - 1)


def test_a_register_named_twice_is_read_once():
    assert cycles("FFMA R6, R3, R3, RZ") == [1]
    assert cycles("FFMA R6, R4, R4, R8") == [2]
