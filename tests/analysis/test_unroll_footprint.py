"""A pass that does not change which addresses are accessed must not change the footprint: the
``unroll{factor=2|4|8}`` candidates of every kernel whose footprint is ``exact`` keep the same
per-buffer bytes and sectors and the same per-access address forms (the lane strides that decide a
warp's sectors), and the footprint of an unrolled kernel still equals the bytes the interpreter
touches on the check launch (:mod:`ptxopt.analysis.reroll` counts an unrolled loop as the loop it
repeats only where the copies provably run the original's iterations).
"""

from __future__ import annotations

import json

import pytest

from ptxopt.analysis.global_footprint import access_forms, footprint_of_text, launch_footprint
from ptxopt.kernels.corpus import load_manifest
from ptxopt.interp.workload import make_args
from ptxopt.ptx.parser import parse
from ptxopt.passes.base import Refused
from ptxopt.passes.passmanager import PassFailure, run_passes_unchecked

from corpus_tiers import corpus_params
from test_footprint_alternatives import OUTSIDE, _contract_args, _with_check_launch
from test_global_footprint import _check, _run, _touched

FACTORS = (2, 4, 8)


def _unrolled(text: str, f: int) -> str | None:
    """The ``unroll{factor=f}`` candidate, or None where the pass changes nothing (no loop it unrolls)."""
    try:
        out = run_passes_unchecked(text, f"unroll{{factor={f}}}", allow_unchecked=True)
    except (Refused, PassFailure):
        return None
    return None if out == text else out


def _buffers(fp) -> list:
    return sorted((b.name, b.source, b.read_bytes, b.write_bytes, b.read_sectors, b.write_sectors)
                  for b in fp.buffers)


def _forms(text, entry, grid, block, scalars) -> set:
    """Per access: kind, buffer, width and its address form (None where not affine)."""
    fn = parse(text, entry).pick_entry(entry, "test")
    return {(a.kind, a.buffer, a.width, None if a.form is None else repr(a.form))
            for a in access_forms(fn, grid, block, scalars)}


def _same_after_unroll(text, entry, grid, block, scalars) -> int:
    """Asserts every unroll candidate keeps the exact footprint and the access forms; how many ran."""
    before = footprint_of_text(text, entry, grid, block, scalars)
    if before.source != "exact":
        return 0
    forms = _forms(text, entry, grid, block, scalars)
    ran = 0
    for f in FACTORS:
        out = _unrolled(text, f)
        if out is None:
            continue
        ran += 1
        after = footprint_of_text(out, entry, grid, block, scalars)
        assert (after.source, after.floor_bytes, _buffers(after)) == \
            (before.source, before.floor_bytes, _buffers(before)), (f, after.describe(), after.notes)
        assert _forms(out, entry, grid, block, scalars) == forms, f
    return ran


_OUTSIDE = sorted(p.name.split(".")[0] for p in OUTSIDE.glob("*.contract.json"))


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n.startswith("sgemm") else n
                                  for n in _OUTSIDE])
def test_outside_kernels_keep_their_footprint_when_unrolled(name):
    contract = json.loads((OUTSIDE / f"{name}.contract.json").read_text())
    perf = contract.get("performance") or contract["launch"]
    _same_after_unroll((OUTSIDE / f"{name}.ptx").read_text(), contract["entry"], perf["grid"], perf["block"],
                       perf.get("scalars") or {})


def test_the_row_kernels_are_unrolled_and_checked():
    """The class the footprint missed (a row per thread, a runtime-bound inner loop): the guarded
    form runs for each factor, so the comparison above is not vacuous."""
    for name in ("rows_dot", "rows_axpy", "rows_horner", "rows_gemv"):
        contract = json.loads((OUTSIDE / f"{name}.contract.json").read_text())
        perf = contract["performance"]
        assert _same_after_unroll((OUTSIDE / f"{name}.ptx").read_text(), contract["entry"], perf["grid"],
                                  perf["block"], perf["scalars"]) == len(FACTORS), name


@pytest.mark.parametrize("name", [n for n in _with_check_launch() if not n.startswith("sgemm")])
def test_unrolled_outside_kernels_match_the_interpreter(name):
    contract = json.loads((OUTSIDE / f"{name}.contract.json").read_text())
    launch = contract["launch"]
    args, scalars = _contract_args(contract)
    for f in FACTORS:
        out = _unrolled((OUTSIDE / f"{name}.ptx").read_text(), f)
        if out is None:
            continue
        fp, touched = _run(out, contract["entry"], tuple(launch["grid"]), tuple(launch["block"]), args, scalars,
                           shared=launch.get("shared_bytes", 0))
        _check(fp, touched)


_LOOPED = [k for k in load_manifest() if k.family != "gemm_tile" and k.loops]


@pytest.mark.parametrize("spec", corpus_params(_LOOPED))
def test_unrolled_corpus_kernels_keep_their_footprint_and_match_the_interpreter(spec):
    text = spec.ptx_text()
    scalars = {p.name: p.value for p in spec.params if p.role == "scalar"}
    grid, block = spec.launch.grid, spec.launch.block
    _same_after_unroll(text, spec.entry, grid, block, scalars)
    names = {p.name for p in spec.params if p.role != "scalar"}
    out = _unrolled(text, 4)
    if out is None:
        return
    module = parse(out, spec.id)
    fp = launch_footprint(module.pick_entry(spec.entry), grid, block, scalars)
    _check(fp, _touched(module, spec.entry, grid, block, make_args(spec, 0), names, spec.launch.shared_bytes))
