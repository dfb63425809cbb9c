"""Read footprints per loop and the spiked reruns (ptxopt.equivalence.footprint):
a loop rewrite that skips an element of a max reduction is caught."""

import numpy as np
import pytest

from ptxopt import parse
from ptxopt.kernels.corpus import get
from ptxopt.equivalence.footprint import footprint_difference, spiked
from ptxopt.equivalence.interpret import verify
from ptxopt.interp.device_memory import OTHER_READ
from ptxopt.passes.unroll import Unroll
from ptxopt.testing.loop_mutants import loop_mutants


@pytest.fixture(scope="module")
def softmax():
    spec = get("gen_softmax_rows_01")
    return spec, parse(spec.ptx_text(), spec.path)


def test_a_max_loop_that_skips_an_element_differs(softmax):
    """The first copy of the unrolled max loop steps 129 instead of 128: each
    row's element 128 never reaches the row maximum. Random inputs rarely put
    the maximum there, so the plain launches all agree (this was ``equal``
    before the footprints); the loop's read footprint lacks those elements
    and the spiked rerun shows the difference."""
    spec, m = softmax
    mu = next(x for x in loop_mutants(m, spec.entry, 4) if x.operator == "off_by_one_step" and x.line == 83)
    r = verify(m, mu.module, spec.entry, spec=spec)
    assert r.status == "mismatch", (r.status, r.error)
    assert "read by the original only spiked" in r.mismatch.flavour
    probe = [la["read_probe"] for la in r.launches if "read_probe" in la]
    assert probe and "read only by the original: softmax_rows_param_0 (4 elements)" in probe[0], probe
    assert probe[0].endswith("(original): differ"), probe


def test_a_correct_unroll_reads_the_same_per_loop(softmax):
    spec, m = softmax
    out, rep = Unroll(factor=4).apply(m)
    assert rep.changed
    r = verify(m, out, spec.entry, spec=spec)
    assert r.status == "equal", r.error
    assert not [la for la in r.launches if "read_probe" in la]


def test_footprints_are_compared_per_loop():
    """Loop L1 of the candidate skips byte 4 that loop L2 still reads: the
    whole-launch union is the same, the per-loop footprint is not."""
    a = {"x": np.array([1 | 2, 1 | 2, 0, 0, 1 | 2, 0], dtype=np.uint32)}
    b = {"x": np.array([1 | 2, 1 | 2, 0, 0, 2, 0], dtype=np.uint32)}
    only_a, only_b = footprint_difference(a, b, ["x"], {"L1": 1, "L2": 2}, {"L1": 1, "L2": 2})
    assert list(np.flatnonzero(only_a[0])) == [4] and only_b == {}
    # loops matched by label, not by bit; loads outside loops compared too
    b2 = {"x": np.array([2 | 1, 2 | 1, 0, 0, 2 | 1, OTHER_READ], dtype=np.uint32)}
    only_a, only_b = footprint_difference(a, b2, ["x"], {"L1": 1, "L2": 2}, {"L1": 2, "L2": 1})
    assert only_a == {} and list(np.flatnonzero(only_b[0])) == [5]
    assert footprint_difference(a, a, ["x"], {"L1": 1}, {"L1": 1}) == ({}, {})


def test_spiked_elements_exceed_every_other_value():
    x = np.array([1.0, -3.0, np.nan, 2.5, np.inf], dtype=np.float32)
    mask = np.zeros(x.nbytes, dtype=bool)
    mask[4:8] = True  # element 1
    hi, lo = spiked([x, 7], {0: mask}, "high"), spiked([x, 7], {0: mask}, "low")
    assert hi[0][1] > 2.5 and np.isfinite(hi[0][1]) and lo[0][1] < -3.0
    assert x[1] == -3.0 and hi[1] == 7  # the arguments are copied, scalars kept
    i = np.array([5, np.iinfo(np.int32).max], dtype=np.int32)
    m = np.zeros(8, dtype=bool)
    m[:4] = True
    assert spiked([i], {0: m}, "high")[0][0] == np.iinfo(np.int32).max  # clipped, no wrap
    assert spiked([3], {0: m}, "high") is None  # nothing to spike
    # a ranged input (indices in [0, 40)) stays in its contract range
    assert spiked([i], {0: m}, "high", {0: (0, 40)})[0][0] == 39
    assert spiked([i], {0: m}, "low", {0: (0, 40)})[0][0] == 0
    assert spiked([x], {0: mask}, "high", {0: (-1.0, 1.0)})[0][1] == np.nextafter(np.float32(1), np.float32(0))


def test_a_budgeted_check_never_calls_a_read_difference_equal(softmax):
    """Under a step budget (the Triton hook) the spiked reruns are not run;
    a read difference they would settle ends ``inconclusive``, never
    ``equal`` (the plain launches of this mutant all agree)."""
    from ptxopt.equivalence.budget import StepBudget

    spec, m = softmax
    mu = next(x for x in loop_mutants(m, spec.entry, 4) if x.operator == "off_by_one_step" and x.line == 83)
    r = verify(m, mu.module, spec.entry, spec=spec, budget=StepBudget(10**9))
    assert r.status == "inconclusive", (r.status, r.error)
    assert "read different elements" in r.error


# a max over x[0..63] of one thread, each element copied to shared memory by cp.async first;
# LIMIT is the loop's bound (64: the kernel, 65: a mutant whose extra iteration reads x[64])
CP_ASYNC_MAX = """.version 8.0
.target sm_80
.address_size 64

.visible .entry cpmax(.param .u64 px, .param .u64 pout)
{
	.reg .pred %p<2>;
	.reg .b32 %r<8>;
	.reg .f32 %f<4>;
	.reg .b64 %rd<8>;
	.shared .align 16 .b8 sm[16];
	ld.param.u64 %rd1, [px];
	ld.param.u64 %rd2, [pout];
	cvta.to.global.u64 %rd1, %rd1;
	cvta.to.global.u64 %rd2, %rd2;
	mov.u32 %r1, sm;
	mov.f32 %f1, 0fFF800000;
	mov.u32 %r2, 0;
$L_loop:
	mul.wide.u32 %rd3, %r2, 4;
	add.s64 %rd4, %rd1, %rd3;
	cp.async.ca.shared.global [%r1], [%rd4], 4;
	cp.async.wait_all;
	ld.shared.f32 %f2, [%r1];
	max.f32 %f1, %f1, %f2;
	add.s32 %r2, %r2, 1;
	setp.lt.u32 %p1, %r2, LIMIT;
	@%p1 bra $L_loop;
	st.global.f32 [%rd2], %f1;
	ret;
}
"""


def test_cp_async_sources_are_in_the_read_footprint():
    """The bytes a ``cp.async`` copies are read like a load's (with its loop's
    tag); a zero-filled part (src-size below cp-size) reads nothing."""
    from ptxopt.equivalence.footprint import loop_tags
    from ptxopt.interp import Program, run_kernel

    p = Program(parse(CP_ASYNC_MAX.replace("LIMIT", "64")))
    tags, labels = loop_tags(p, "cpmax")
    x = np.arange(80, dtype=np.float32)
    r = run_kernel(p, "cpmax", 1, 1, [x, np.zeros(1, np.float32)], reads=tags)
    read = r.reads["px"]
    assert ((read[:256] & labels["$L_loop"]) != 0).all() and not read[256:].any()
    partial = parse(CP_ASYNC_MAX.replace("LIMIT", "2").replace("[%rd4], 4;", "[%rd4], 4, 2;"))
    r = run_kernel(partial, "cpmax", 1, 1, [x, np.zeros(1, np.float32)], reads=True)
    assert list(np.flatnonzero(r.reads["px"])) == [0, 1, 4, 5]  # 2 of each 4 bytes read, 2 zero-filled


def test_an_extra_iteration_that_reads_only_through_cp_async_differs():
    """The loop runs once more and its extra iteration reads x[64] only
    through ``cp.async``. Random inputs rarely put the maximum there (the
    plain launches agree); the footprint now holds cp.async sources, so
    the element read by the candidate alone is spiked and the max moves.
    Before cp.async sources were recorded this was ``equal`` (the memory
    layouts, whose overlapping output moves x, are left out: they catch this
    one by accident)."""
    from ptxopt.equivalence.interpret import Geometry

    m, mu = (parse(CP_ASYNC_MAX.replace("LIMIT", n)) for n in ("64", "65"))
    r = verify(m, mu, "cpmax", geometry=Geometry(buffer_bytes=1024), layouts=False)
    assert r.status == "mismatch", (r.status, r.error)
    probe = [la["read_probe"] for la in r.launches if "read_probe" in la]
    assert probe and "read only by the transformed: px (1 elements)" in probe[0], probe
    assert "read by the transformed only spiked high" in r.mismatch.flavour


# a sum over x[0..n) of one thread, from -0.0 (the additive identity compilers use); each
# iteration reads x[i] masked by i < n (READ: a cp.async zero-fill or a predicated-off load),
# LIMIT is the loop's bound: %r5 = n (the kernel) or %r6 = n rounded up to 4 (a mutant whose
# extra iterations see only masked zeros, as an unrolled loop whose guard was dropped)
MASKED_SUM = """.version 8.0
.target sm_80
.address_size 64

.visible .entry msum(.param .u64 px, .param .u64 pout, .param .u32 pn)
{
	.reg .pred %p<3>;
	.reg .b32 %r<8>;
	.reg .f32 %f<4>;
	.reg .b64 %rd<8>;
	.shared .align 16 .b8 sm[16];
	ld.param.u64 %rd1, [px];
	ld.param.u64 %rd2, [pout];
	ld.param.u32 %r5, [pn];
	cvta.to.global.u64 %rd1, %rd1;
	cvta.to.global.u64 %rd2, %rd2;
	mov.u32 %r1, sm;
	add.s32 %r6, %r5, 3;
	and.b32 %r6, %r6, -4;
	mov.f32 %f1, 0f80000000;
	mov.u32 %r2, 0;
$L_loop:
	setp.lt.u32 %p2, %r2, %r5;
	mul.wide.u32 %rd3, %r2, 4;
	add.s64 %rd4, %rd1, %rd3;
READ
	add.f32 %f1, %f1, %f2;
	add.s32 %r2, %r2, 1;
	setp.lt.u32 %p1, %r2, LIMIT;
	@%p1 bra $L_loop;
	st.global.f32 [%rd2], %f1;
	ret;
}
"""
MASKED_READS = {
    "cp.async zero-fill": """	selp.b32 %r3, 4, 0, %p2;
	cp.async.ca.shared.global [%r1], [%rd4], 4, %r3;
	cp.async.wait_all;
	ld.shared.f32 %f2, [%r1];""",
    "predicated-off load": """	mov.f32 %f2, 0f00000000;
	@%p2 ld.global.f32 %f2, [%rd4];""",
}


@pytest.mark.parametrize("form", sorted(MASKED_READS))
def test_extra_iterations_that_see_only_masked_values_are_not_equal(form):
    """The mutant's extra iterations read nothing (their reads are masked),
    so the footprint cannot show them and no spike can vary them; they add
    +0.0, which changes only a -0.0 sum (x[0] = -0.0, n = 1: the original
    stores -0.0, the mutant +0.0), an input no flavour makes. Before masked
    reads were counted this was ``equal``; now the counts per loop differ
    and the check ends ``inconclusive``. A correct unroll of the same loop
    masks the same reads and stays ``equal``."""
    from ptxopt.equivalence.interpret import Geometry
    from ptxopt.interp import run_kernel

    kernel = MASKED_SUM.replace("READ", MASKED_READS[form])
    m, mu = (parse(kernel.replace("LIMIT", reg)) for reg in ("%r5", "%r6"))
    x = np.zeros(8, np.float32)
    x[0] = -0.0
    a, b = (run_kernel(k, "msum", 1, 1, [x.copy(), np.ones(1, np.float32), 1]).buffers[1] for k in (m, mu))
    assert a.view(np.uint32)[0] == 0x80000000 and b.view(np.uint32)[0] == 0  # a real difference
    geo = Geometry(buffer_bytes=1024)
    r = verify(m, mu, "msum", geometry=geo)
    assert r.status == "inconclusive", (r.status, r.error)
    assert "masked global reads differ loop $L_loop: 0 bytes in the original, 12 in the transformed" in r.error
    assert any("masked_reads" in la for la in r.launches)
    out, rep = Unroll(factor=4).apply(m)
    assert rep.changed
    r = verify(m, out, "msum", geometry=geo)
    assert r.status == "equal", (r.status, r.error)


def test_masked_reads_are_compared_per_loop_and_in_all():
    from ptxopt.equivalence.footprint import masked_difference

    labels = {"L1": 1, "L2": 2}
    a = {1: 12, 2: 4, OTHER_READ: 8}
    assert masked_difference(a, dict(a), labels, labels) is None
    assert masked_difference(a, {1: 12, 2: 8, OTHER_READ: 8}, labels, labels).startswith(
        "masked global reads differ loop L2: 4 bytes in the original, 8")
    # loops matched by label, not by bit; a loop only one kernel has counts in the total
    assert masked_difference(a, {2: 12, 1: 4, OTHER_READ: 8}, labels, {"L1": 2, "L2": 1}) is None
    assert "differ: 24 bytes in the original, 28" in masked_difference(a, {1: 12, 2: 4, 4: 4, OTHER_READ: 8},
                                                                       labels, {**labels, "L3": 4})
    assert masked_difference(None, a, labels, labels) is None


@pytest.mark.parametrize("seed", [1, 2, 23, 25, 29])
def test_random_masked_tails_are_never_equal(seed):
    """ptxopt.testing.masked_tails: loops whose extra iterations see only
    masked values, in every masked form (cp.async zero-fill, a guarded
    cp.async, guarded scalar and vector loads). Each seed here has a witness
    input that shows a real difference; the check never calls the pair
    ``equal``, and the correct unroll of the same loop stays ``equal``."""
    from ptxopt.equivalence.interpret import Geometry
    from ptxopt.testing.masked_tails import masked_tail_case, witness_differs

    case = masked_tail_case(seed)
    assert case.witness is not None and witness_differs(case), case.what
    geo = Geometry(buffer_bytes=1024)
    m = parse(case.original)
    r = verify(m, parse(case.mutant), "masked_tail", geometry=geo)
    assert r.status in ("inconclusive", "mismatch"), (case.what, r.status)
    if seed in (2, 25):
        out, rep = Unroll(factor=case.factor).apply(m)
        assert rep.changed and verify(m, out, "masked_tail", geometry=geo).status == "equal", case.what


def test_masked_tail_forms_all_drawn():
    from ptxopt.testing.masked_tails import ACCUMULATORS, FORMS, masked_tail_case

    cases = [masked_tail_case(s) for s in range(40)]
    assert {c.form for c in cases} == set(FORMS) and {c.accumulator for c in cases} == set(ACCUMULATORS)
    assert masked_tail_case(7).original == masked_tail_case(7).original  # deterministic
