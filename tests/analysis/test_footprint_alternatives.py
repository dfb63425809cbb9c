"""Footprints through values with alternatives (``selp``, ``min``/``max``, a guarded overwrite), values
known only by a range, and guards that exclude lanes, against the bytes the interpreter touches.

A generator writes small kernels whose read index goes through one such construct (the tempting cases:
an index through ``selp`` that looks affine but is chosen by loaded data, a clamp, a guard that leaves
lanes out).  Where the choice is decided by the index alone the footprint must be ``exact`` and equal
to what the interpreter touched, byte for byte and sector for sector; where loaded data decides it,
the footprint must not be called exact and must not count fewer bytes than were touched.  The kernels
written outside the corpus (``benchmarks/outside_kernels/``) are checked the same way on their
contracts' check launches.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest

from ptxopt.ptx.parser import parse
from test_global_footprint import _HEAD, _check, _run

OUTSIDE = Path(__file__).resolve().parents[2] / "benchmarks" / "outside_kernels"

#: index constructs: name -> (PTX computing %r6 from i = %r5, n = %r1, the loaded word %r8, A; the source
#: the x buffer must get: "exact" (the index decides), "bound" (loaded data decides: an upper bound) or
#: "either" (exact or an upper bound, never unknown: a shift of an index whose bits carry))
CONSTRUCTS = {
    "min": ("add.s32 %r7, %r5, {A};\n  min.s32 %r6, %r7, %r1;", "exact"),
    "max": ("add.s32 %r7, %r5, -{A};\n  max.s32 %r6, %r7, 0;", "exact"),
    "clamp": ("add.s32 %r7, %r5, -{A};\n  max.s32 %r9, %r7, 0;\n  min.s32 %r6, %r9, %r1;", "exact"),
    "selp_affine": ("setp.lt.s32 %p1, %r5, %r1;\n  add.s32 %r7, %r5, {A};\n  selp.b32 %r6, %r7, %r5, %p1;", "exact"),
    "selp_shifted": ("setp.lt.s32 %p1, %r5, %r1;\n  add.s32 %r7, %r5, {A};\n  selp.b32 %r9, %r7, %r5, %p1;\n"
                     "  shr.u32 %r6, %r9, 1;", "either"),
    "guarded_overwrite": ("mov.u32 %r6, %r5;\n  setp.lt.s32 %p1, %r5, %r1;\n  @%p1 add.s32 %r6, %r5, {A};", "exact"),
    # the tempting ones: they look affine, but loaded data decides the index
    "selp_data": ("setp.ne.s32 %p1, %r8, 0;\n  add.s32 %r7, %r5, {A};\n  selp.b32 %r6, %r7, %r5, %p1;", "bound"),
    "overwrite_data": ("mov.u32 %r6, %r5;\n  setp.ne.s32 %p1, %r8, 0;\n  @%p1 add.s32 %r6, %r5, {A};", "bound"),
    "masked_data": ("and.b32 %r9, %r8, 7;\n  add.s32 %r6, %r5, %r9;", "bound"),
    "min_data": ("min.u32 %r6, %r8, %r1;", "bound"),
}


def _kernel(construct: str, a: int, guard: int | None) -> str:
    body, _ = CONSTRUCTS[construct]
    load_guard = ""
    if guard is not None:  # a guard that leaves one lane of the launch out of the read
        load_guard = f"setp.ne.s32 %p2, %r5, {guard};\n  @!%p2 bra SKIP;\n  "
    return _HEAD + f"""
.visible .entry alt(.param .u64 x, .param .u64 y, .param .u64 d, .param .u32 n)
{{
  .reg .pred %p<4>; .reg .b32 %r<12>; .reg .b64 %rd<12>; .reg .f32 %f<3>;
  ld.param.u64 %rd1, [x];
  ld.param.u64 %rd2, [y];
  ld.param.u64 %rd3, [d];
  ld.param.u32 %r1, [n];
  mov.u32 %r2, %tid.x;
  mov.u32 %r3, %ctaid.x;
  mov.u32 %r4, %ntid.x;
  mad.lo.s32 %r5, %r3, %r4, %r2;
  mul.wide.s32 %rd6, %r5, 4;
  add.s64 %rd8, %rd3, %rd6;
  ld.global.u32 %r8, [%rd8];
  {body.format(A=a)}
  mov.f32 %f1, 0f00000000;
  {load_guard}mul.wide.s32 %rd4, %r6, 4;
  add.s64 %rd5, %rd1, %rd4;
  ld.global.f32 %f1, [%rd5];
SKIP:
  add.s64 %rd7, %rd2, %rd6;
  st.global.f32 [%rd7], %f1;
  ret;
}}
"""


def _cases(count: int, seed: int = 43):
    rng = random.Random(seed)
    names = sorted(CONSTRUCTS)
    for i in range(count):
        construct = names[i % len(names)]
        yield pytest.param(construct, rng.randrange(0, 40), rng.randrange(1, 200), rng.choice((32, 64, 96)),
                           rng.choice((1, 2, 3)), rng.choice((None, None, rng.randrange(0, 64))),
                           id=f"{construct}-{i}")


@pytest.mark.parametrize("construct,a,n,block,grid,guard", list(_cases(30)))
def test_alternatives_are_exact_only_when_the_index_decides(construct, a, n, block, grid, guard):
    threads = block * grid
    rng = np.random.default_rng(a * 1000 + n)
    args = {"x": np.zeros(threads + 64, np.float32), "y": np.zeros(threads, np.float32),
            "d": rng.integers(0, 3, threads).astype(np.uint32), "n": n}
    fp, touched = _run(_kernel(construct, a, guard), "alt", (grid, 1, 1), (block, 1, 1), args, {"n": n})
    _check(fp, touched)
    x = next(b for b in fp.buffers if b.name == "x")
    want = CONSTRUCTS[construct][1]
    if want == "exact" and guard is None:
        assert x.source == "exact", (construct, x)
    if want == "bound":
        assert x.source == "extrapolated", (construct, x)  # an upper bound, never exact, never unknown
    assert x.source != "unknown", (construct, x)
    assert fp.floor_bytes is not None  # the other buffers are exact: a partial floor still stands


def _contract_args(contract: dict) -> tuple[dict, dict]:
    """Arguments for a contract's check launch: zeroed buffers of their counts, the scalars' values."""
    np_type = {"u8": np.uint8, "f16": np.float16, "f32": np.float32, "u32": np.uint32, "s32": np.int32, "f64": np.float64}
    args, scalars = {}, {}
    for p in contract["params"]:
        if p["role"] == "scalar":
            args[p["name"]] = scalars[p["name"]] = p["value"]
        else:
            args[p["name"]] = np.zeros(p["count"], np_type[p["dtype"]])  # a scratch pointer: 0 elements
    return args, scalars


def _with_check_launch() -> list:
    """The outside kernels whose contract has a check launch (some give only the performance launch)."""
    return sorted(p.name.split(".")[0] for p in OUTSIDE.glob("*.contract.json")
                  if "launch" in json.loads(p.read_text()))


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n == "sgemm_reg" else n  # ~2 s
                                  for n in _with_check_launch()])
def test_outside_kernels_match_the_interpreter(name):
    """The footprint of each kernel written outside the corpus on its contract's check launch: exact
    buffers equal the interpreter's bytes and sectors, upper bounds are not below them."""
    contract = json.loads((OUTSIDE / f"{name}.contract.json").read_text())
    launch = contract["launch"]
    args, scalars = _contract_args(contract)
    fp, touched = _run((OUTSIDE / f"{name}.ptx").read_text(), contract["entry"], tuple(launch["grid"]),
                       tuple(launch["block"]), args, scalars, shared=launch.get("shared_bytes", 0))
    assert fp.source != "unknown", fp
    _check(fp, touched)


def test_strided_reads_are_counted_in_whole_sectors():
    """x read every other float: the bytes are half the span, but every 32-byte sector of the span is
    moved, and the DRAM floor counts sectors (a gap under a sector skips none)."""
    from ptxopt.analysis.global_footprint import footprint_of_text

    contract = json.loads((OUTSIDE / "axpy_strided.contract.json").read_text())
    perf = contract["performance"]
    fp = footprint_of_text((OUTSIDE / "axpy_strided.ptx").read_text(), "axpy_strided", perf["grid"], perf["block"],
                           perf["scalars"])
    n = perf["scalars"]["axpy_strided_param_0"]
    x = next(b for b in fp.buffers if b.name == "axpy_strided_param_2")
    assert (x.source, x.read_bytes, x.read_sectors) == ("exact", 4 * n, 8 * n // 32)
    assert fp.floor_bytes == 8 * n + 4 * n + 4 * n  # x's sectors, y read, y written


def test_accesses_stay_one_per_instruction():
    """``accesses()`` (what per-lane stride analyses read) keeps one entry per global access instruction
    in program order; an address with alternatives has no single form there, while the footprint
    counts each alternative under its own condition."""
    from ptxopt.analysis.global_footprint import _kernel_at

    fn = parse(_kernel("selp_affine", 5, None), "alt").pick_entry("alt", "alt")
    k = _kernel_at(fn, (1, 1, 1), (64, 1, 1), {"n": 50})
    per_ins, cases = k.accesses(), k.case_accesses()
    assert [a.iid for a in per_ins] == sorted({a.iid for a in cases})
    x = [a for a in per_ins if a.buffer == "x"]
    assert len(x) == 1 and x[0].form is None and "alternatives" in x[0].why
    assert len([a for a in cases if a.buffer == "x"]) == 2
