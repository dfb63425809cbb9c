"""Uncoalesced global accesses are charged in sectors (ptxopt.sim.coalescing): a warp whose lanes' addresses
are S bytes apart moves the distinct 32-byte sectors they touch between L1 and L2, and takes one L1
wavefront per distinct 128-byte line -- not one coalesced transfer.  ESTIMATES of the model.

The cases that tempt a per-thread model into charging a coalesced transfer: a naive transpose's
column-wise store (lane stride = a row) and a strided gather (lane stride 32 B); and a generated table
of lane strides, from a broadcast (stride 0) to a stride of a page, against the definition (the set of
sectors 32 lanes touch).
"""

from __future__ import annotations

import pytest

from ptxopt.sim.coalescing import LINE, SECTOR, lane_charges

from test_floors import outside

#: lane stride in bytes -> a kernel storing one 4-byte word per thread at out + tid.x * stride
STRIDES = (0, 4, 8, 12, 16, 32, 36, 64, 128, 132, 4096)


def _strided_store(stride: int, width: int = 4) -> str:
    st = {4: "st.global.f32 [%rd3], %f1;", 8: "st.global.v2.f32 [%rd3], {%f1, %f1};",
          16: "st.global.v4.f32 [%rd3], {%f1, %f1, %f1, %f1};"}[width]
    return f"""
.version 8.0
.target sm_89
.address_size 64
.visible .entry k(.param .u64 k_param_0)
{{
    .reg .b32 %r<2>;
    .reg .f32 %f<2>;
    .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [k_param_0];
    cvta.to.global.u64 %rd1, %rd1;
    mov.u32 %r1, %tid.x;
    mul.wide.u32 %rd2, %r1, {stride};
    add.s64 %rd3, %rd1, %rd2;
    mov.f32 %f1, 0f3F800000;
    {st}
    ret;
}}
"""


class _Launch:
    def __init__(self, grid, block, scalars=None):
        self.grid, self.block, self.scalars = grid, block, scalars or {}


@pytest.mark.parametrize("width", [4, 8, 16])
@pytest.mark.parametrize("stride", STRIDES)
def test_sectors_and_wavefronts_are_the_lanes_distinct_ones(stride, width):
    (a,) = lane_charges(_strided_store(stride, width), "k", _Launch((1, 1, 1), (64, 1, 1))).accesses
    addrs = [lane * stride for lane in range(32)]
    sectors = {s for x in addrs for s in range(x // SECTOR, (x + width - 1) // SECTOR + 1)}
    lines = {s for x in addrs for s in range(x // LINE, (x + width - 1) // LINE + 1)}
    assert (a.kind, a.width, a.lanes, a.sectors, a.lines) == ("write", width, 32, len(sectors), len(lines))
    assert a.l2_factor == pytest.approx(len(sectors) * SECTOR / (32 * width))
    if stride == width:  # coalesced: the walk's own per-thread charge
        assert a.l2_factor == 1 and a.l1_factor == 1


def test_a_block_narrower_than_a_warp_spans_rows():
    """16x16 threads: a warp is two rows of 16 lanes, ``tid.y`` the second digit of the lane."""
    text = _strided_store(4)
    text = text.replace("mov.u32 %r1, %tid.x;", "mov.u32 %r1, %tid.y;")  # stride 4 B along tid.y only
    (a,) = lane_charges(text, "k", _Launch((1, 1, 1), (16, 16, 1))).accesses
    assert (a.lanes, a.sectors, a.lines) == (32, 1, 1)  # two addresses 4 B apart: one sector


def test_the_tempting_cases_found_from_the_kernels():
    t, e, launch = outside("transpose_naive")
    read, write = lane_charges(t, e, launch).accesses
    assert (read.sectors, read.lines) == (4, 1)  # in[y * n + x]: lanes along x, coalesced
    assert (write.sectors, write.lines) == (32, 32)  # out[x * n + y]: lanes 32 KiB apart
    t, e, launch = outside("gather_strided")
    charges = lane_charges(t, e, launch)
    assert [(a.kind, a.sectors, a.lines) for a in charges.accesses] == [("read", 32, 8), ("read", 32, 8),
                                                                        ("write", 4, 1)]


def _facts(name: str):
    from ptxopt.measure.backend import MeasureJob
    from ptxopt.measure.sim import SimBackend
    from ptxopt.ptx.parser import parse

    text, entry, launch = outside(name)
    job = MeasureJob(text, "sm_89", None, entry, module=parse(text, entry), objective="throughput",
                     performance=launch, check_block=launch.block)
    (m,) = SimBackend().measure_many([job])
    if isinstance(m, Exception):
        raise m
    return m.extra["facts"], launch


@pytest.mark.parametrize("name,l2,l1", [
    # per thread: the coalesced read (4 B, one line per warp) + the column store (its own sector: 32 B;
    # its own line: a 128-byte wavefront per lane)
    ("transpose_naive", 4 + 32, 4 + 128),
    # the first load's sector (32 B; the second load at +4 B hits it in L1) + the coalesced store;
    # each load's 8 lines per warp = 32 B of wavefront per lane
    ("gather_strided", 32 + 4, 32 + 32 + 4),
])
def test_the_walk_charges_the_sectors_the_lanes_touch(name, l2, l1):
    """The model before the lanes fed the walk charged 8 B (4 + 4) to L2 per thread for both, and 8 / 12 B
    to L1: a coalesced transfer per access, 4.5x too few L2 bytes."""
    facts, _ = _facts(name)
    assert facts["l2_bytes"] == l2
    assert facts["l1_bytes"] == l1


def test_accesses_ptxas_replicated_are_charged_the_class_mean_and_say_so():
    """Two PTX reads (a broadcast and a coalesced one) that ptxas unrolled into four: every SASS read
    gets the mean factors, labelled ASSUMED."""
    from types import SimpleNamespace

    from ptxopt.sim.coalescing import LaneCharge, LaneCharges, sass_factors

    ins = [SimpleNamespace(base_opcode=op) for op in ("LDG", "LDG", "FFMA", "LDG", "LDG", "STG")]
    charges = LaneCharges((LaneCharge("read", 4, 32, 1, 1), LaneCharge("read", 4, 32, 4, 1),
                           LaneCharge("write", 4, 32, 32, 32)))
    per, notes = sass_factors(SimpleNamespace(instructions=ins), charges)
    mean = ((1 + 1) / 2, (0.25 + 1) / 2)
    assert per == [mean, mean, None, mean, mean, (32.0, 8.0)]
    assert any("ASSUMED" in n and "mean" in n for n in notes)
    # the same two reads kept one to one by ptxas: charged alike all the same (whether ptxas unrolled
    # must not change the charge: a pass that only changes the unrolling would gain from it)
    per, notes = sass_factors(SimpleNamespace(instructions=ins[:2] + ins[5:]), charges)
    assert per == [mean, mean, (32.0, 8.0)]
