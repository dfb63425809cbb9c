"""Every pass on every corpus kernel: the output round-trips, ptxas accepts it
and the interpreter proves it equivalent to the original (2 trials: random and
edge-value inputs, lockstep and warp-serial schedules), or nothing differed
but a changed instruction never ran under the manifest launch (unverified, the
lines named), or the pass refused with a reason (or had nothing to do)."""

import pytest

from ptxopt.kernels.corpus import load_manifest
from ptxopt.testing.matrix import run_cell
from ptxopt.ptx.parser import parse
from ptxopt.passes import pass_names
from ptxopt.passes.registry import plugin_kinds
from corpus_tiers import full_corpus, is_fast, slow_kernels

KERNELS = load_manifest()

#: Passes that may rightly change no corpus kernel, and why (each is exercised elsewhere).
APPLIES_NOWHERE_HERE = {
    "nc_ld": "every corpus kernel stores through a pointer parameter, and PTX cannot say two parameters do not "
             "alias, so no loaded buffer is provably read-only (tests/golden/nc_ld, tests/adversarial/nc_ld_*)",
    "loop_version_2": "no corpus loop is a single-block walk of unpredicated global elements (Triton masks its loads, "
                      "nvcc's unrolled loops carry 4 elements per iteration, its remainders .pragma nounroll; "
                      "benchmarks/results/loop_version_report.md; tests/golden/loop_version_2, test_loop_version.py)",
    "loop_version_4": "no corpus loop is a single-block walk of unpredicated global elements (Triton masks its loads, "
                      "nvcc's loops are several blocks or .pragma nounroll; the row-per-thread kernels of "
                      "benchmarks/outside_kernels are its targets: tests/golden/loop_version_4)",
}
#: Passes whose only corpus targets are outside the fast tier, and why.
APPLIES_ONLY_IN_SLOW_TIER = {
    "unroll_2": "the only corpus loop with a constant trip count is cuda_attention_small's (64 iterations)",
    "unroll_4": "the only corpus loop with a constant trip count is cuda_attention_small's (64 iterations)",
    "swp_ld_1": "the hand-written kernels it rewrites are nvcc's with .nc loads, whose copies cap the proof at "
                "inconclusive (unproven_nc_loads); the generated families' loops are proved in the slow tier",
    "swp_ld_2": "as swp_ld_1",
}
_parsed = {}


def _module(spec):
    if spec.id not in _parsed:
        _parsed[spec.id] = parse(spec.ptx_text(), spec.id)
    return _parsed[spec.id]


# Kernels whose interpreter launch takes 5-17 s CPU per trial (long loops, big
# blocks). For the suite's time budget they get one random input set per pass
# here, not two, and the variants of a mechanism that another pass of the
# matrix already runs on them (reorder_il/lf/sl beside reorder_cp: one
# scheduler, other priorities; unroll_2 beside unroll_4) skip them.
# PTXOPT_FULL_CORPUS=1 restores both. test_prove_corpus mutates them too.
HEAVY = frozenset({"triton_flash_attn_fwd", "triton_flash_attn_fwd_causal", "triton_attention",
                   "cuda_attention_small", "gen_gemv_00"})
VARIANTS = frozenset({"reorder_il", "reorder_lf", "reorder_sl", "unroll_2"})


_cells = {}


def _cell(pass_name, spec, trials):
    """run_cell, once per (pass, kernel, trials) in this process: the slow
    sweep's kernels include the fast tier's, whose cells the fast test
    computed already when the two ran in one process (run_cell is
    deterministic)."""
    key = (pass_name, spec.id, trials)
    if key not in _cells:
        _cells[key] = run_cell(pass_name, spec, _module(spec), equivalence_trials=trials)
    return _cells[key]


def _check(pass_name, kernels, fast=False):
    light = not full_corpus()
    if light and pass_name in VARIANTS:
        kernels = [k for k in kernels if k.id not in HEAVY]
    cells = [_cell(pass_name, k, 1 if light and k.id in HEAVY else 2) for k in kernels]
    broken = [f"{c.kernel}: {c.detail}" for c in cells if c.outcome == "broken"]
    assert not broken, "\n".join(broken)
    for c in cells:
        if c.outcome == "refused":
            assert c.detail, f"{c.kernel}: refused without a reason"
        if c.outcome == "unverified":  # a change the manifest launch never runs: named, not passed off as equal
            # or a loop rewrite neither the interpreter (its masked-reads rule) nor the proof settles: both named
            assert "never ran" in c.detail or ("masked global reads differ" in c.detail and "; proof " in c.detail), \
                f"{c.kernel}: unverified without the lines or the proof's reason: {c.detail}"
    # Each pass must do something somewhere: a pass that never applies is untested. An installed
    # plugin pass (ptxopt.passes entry points) is held to the rest only: the corpus is not its test bed.
    if (pass_name not in APPLIES_NOWHERE_HERE and not (fast and pass_name in APPLIES_ONLY_IN_SLOW_TIER)
            and pass_name not in plugin_kinds()):
        assert any(c.outcome == "changed" for c in cells), f"{pass_name} changed no corpus kernel"


@pytest.mark.slow
@pytest.mark.parametrize("pass_name", pass_names())
def test_pass_on_every_corpus_kernel(pass_name):
    _check(pass_name, slow_kernels(KERNELS))  # the generated families: their slow-tier slice


@pytest.mark.parametrize("pass_name", pass_names())
def test_pass_on_the_fast_tier_kernels(pass_name):
    """The same check on tests/corpus_tiers.py's hand-written kernels (one per
    producer and shape); the generated families' slice costs a minute here
    (the reorder passes' equivalence runs), so they enter the slow test only."""
    _check(pass_name, [k for k in KERNELS if is_fast(k) and not k.generated], fast=True)
