"""An unrolled copy of the original's own ``ld.global.nc`` loads is no new
assumption; every other new ``.nc`` read keeps the "assumes noalias" cap.

The kernel: ``out[tid] = sum(a[0..n))`` with ``a`` read through ``.nc`` (what
nvcc emits for ``const float* __restrict__ a``). ``out`` is a different
pointer parameter that may alias ``a``, so the read-only analysis proves no
copy of the load; only the interpreter's ``.nc`` footprints
(:mod:`ptxopt.equivalence.nc_reads`) can show the copies read nothing the
original does not read through ``.nc`` already."""

import re

import numpy as np
import pytest

from ptxopt.kernels import corpus
from ptxopt import emit, parse
from ptxopt.equivalence.assumptions import unproven_nc
from ptxopt.equivalence.decision import ASSUMES_NOALIAS, decide, decide_module
from ptxopt.equivalence.launch import Launch, Origin, from_spec
from ptxopt.equivalence.verdict import Verdict
from ptxopt.interp import run_kernel
from ptxopt.interp.device_memory import COHERENT_READ, NC_READ, OTHER_READ, STORED
from ptxopt.passes.readonly_path import NcLd
from ptxopt.passes.unroll import Unroll

HEAD = ".version 8.0\n.target sm_89\n.address_size 64\n"
KERNEL = HEAD + """GLOBALS.visible .entry k(.param .u64 a, .param .u64 out, .param .u32 n)
{
	.reg .pred %p<3>;
	.reg .f32 %f<6>;
	.reg .b32 %r<8>;
	.reg .b64 %rd<10>;
	ld.param.u64 %rd1, [a];
	ld.param.u64 %rd2, [out];
	ld.param.u32 %r1, [n];
	cvta.to.global.u64 %rd3, %rd1;
	cvta.to.global.u64 %rd4, %rd2;
	mov.u32 %r2, %tid.x;
	mov.f32 %f1, 0f00000000;
	mov.u32 %r3, 0;
	setp.eq.s32 %p1, %r1, 0;
	@%p1 bra $done;
$loop:
	mul.wide.u32 %rd5, %r3, 4;
	add.s64 %rd6, BASE, %rd5;
	ld.global.nc.f32 %f2, [%rd6];
	add.f32 %f1, %f1, %f2;
	add.s32 %r3, %r3, 1;
	setp.lt.u32 %p2, %r3, %r1;
	@%p2 bra $loop;
$done:
EXTRA	mul.wide.u32 %rd7, %r2, 4;
	add.s64 %rd8, DEST, %rd7;
	st.global.f32 [%rd8], %f1;
	ret;
}
"""
LAUNCH = Launch((1, 1, 1), (32, 1, 1), scalars={"n": 19}, origin=Origin.CONTRACT, source="test", buffer_bytes=256)
EVIDENCE = "new .nc loads read only bytes the original reads through .nc alone"


def kernel(extra: str = "", dest: str = "%rd4", base: str = "%rd3", globals_: str = ""):
    return parse(KERNEL.replace("EXTRA", extra).replace("DEST", dest).replace("BASE", base)
                 .replace("GLOBALS", globals_))


def unrolled(m, factor=2):
    out, rep = Unroll(factor=factor).apply(m)
    assert rep.changed, rep.refused
    return out


@pytest.mark.parametrize("factor", [2, 4])
def test_unrolled_copies_of_nc_loads_are_equal(factor):
    """The copies are new .nc loads the read-only analysis cannot prove
    (``out`` may alias ``a``); they read only what the original reads through
    .nc, so the interpreter's equal stands (before: inconclusive)."""
    m = kernel()
    out = unrolled(m, factor)
    assert unproven_nc(m, out) is not None
    d = decide(m, out, "k", LAUNCH)
    assert d.verdict is Verdict.EQUAL, d.note
    assert d.note.startswith(EVIDENCE)
    assert re.search(r"on (\d+) launches", d.note).group(1) == str(d.result.trials)


def test_decide_module_lifts_too():
    m = kernel()
    d = decide_module(m, unrolled(m), lambda e: [LAUNCH])
    assert d.verdict is Verdict.EQUAL and EVIDENCE in d.note


def test_unroll_plus_converting_another_load_of_the_buffer_keeps_the_cap():
    """The original also reads a[n] through a plain load; the candidate
    unrolls AND turns that load into .nc (nc_ld{assume_noalias=1}): a[n] is
    read through .nc by the candidate only."""
    extra = ("\tmul.wide.u32 %rd9, %r1, 4;\n\tadd.s64 %rd9, %rd3, %rd9;\n\tld.global.f32 %f3, [%rd9];\n"
             "\tadd.f32 %f1, %f1, %f3;\n")
    m = kernel(extra)
    out, rep = NcLd(assume_noalias=1).apply(unrolled(m))
    assert rep.changed
    d = decide(m, out, "k", LAUNCH)
    assert d.verdict is Verdict.INCONCLUSIVE and d.note.startswith(ASSUMES_NOALIAS), d.note
    # the converted load has the original plain load's operands: known before any launch
    assert d.result.nc_reads is None
    # the same bytes read through a .nc load of another form: the footprints show it
    text = emit(unrolled(m)).replace("ld.global.f32", "ld.global.nc.f32").replace("[%rd9]", "[%rd9+0]")
    d = decide(m, parse(text), "k", LAUNCH)
    assert d.verdict is Verdict.INCONCLUSIVE and "reads it only through coherent loads" in d.note, d.note


def test_converting_a_plain_load_of_bytes_the_original_also_reads_through_nc_keeps_the_cap():
    """The original reads a[0] through .nc (in the loop) AND through a plain
    load; turned into .nc, the plain load's bytes are all .nc-read by the
    original, but its coherent read may be one the original relies on (a
    write between the two): the conversion is an assumption, capped --
    whether the new load has the plain load's operands (nc_ld's rewrite) or
    not (then only the footprints show it)."""
    extra = "\tld.global.f32 %f3, [%rd1];\n\tadd.f32 %f1, %f1, %f3;\n"
    m = kernel(extra)
    out, rep = NcLd(assume_noalias=1).apply(m)
    assert rep.changed
    d = decide(m, out, "k", LAUNCH)
    assert d.verdict is Verdict.INCONCLUSIVE and d.note.startswith(ASSUMES_NOALIAS), d.note
    d = decide(m, NcLd(assume_noalias=1).apply(unrolled(m))[0], "k", LAUNCH)
    assert d.verdict is Verdict.INCONCLUSIVE and d.note.startswith(ASSUMES_NOALIAS), d.note
    other = parse(emit(unrolled(m)).replace("ld.global.f32 \t%f3, [%rd1]", "ld.global.nc.f32 \t%f3, [%rd3]"))
    assert "ld.global.nc.f32 \t%f3, [%rd3]" in emit(other)
    d = decide(m, other, "k", LAUNCH)
    assert d.verdict is Verdict.INCONCLUSIVE and "a coherent load too" in d.note, d.note


def test_a_copied_load_reading_one_element_past_keeps_the_cap():
    """A candidate whose unrolled loop's last copy (the one that runs the
    final iteration) also reads a[i+1] through .nc (a dead load: the outputs
    stay equal) reads a[n], which the original never reads. (In the guarded
    copies a[i+1] is still below n: a read the original makes.)"""
    m = kernel()
    text = emit(unrolled(m))
    head, last = text.split("$loop_last:")
    load = re.search(r"ld\.global\.nc\.f32\s+%f\d+, \[(%rd\d+)\];", last)
    last = last.replace(load.group(0), load.group(0) + f"\n\tld.global.nc.f32 %f5, [{load.group(1)}+4];", 1)
    out = parse(head + "$loop_last:" + last)
    d = decide(m, out, "k", LAUNCH)
    assert d.verdict is Verdict.INCONCLUSIVE and d.note.startswith(ASSUMES_NOALIAS), d.note
    assert "the original never reads it" in d.note and "otherwise equal" in d.note


def test_a_kernel_that_stores_into_its_nc_buffer_keeps_the_cap():
    """out[tid] = sum(a[..]) written into a itself: the bytes the copies read
    through .nc are stored during the launch."""
    m = kernel(dest="%rd3")
    d = decide(m, unrolled(m), "k", LAUNCH)
    assert d.verdict is Verdict.INCONCLUSIVE and "a store writes it during the launch" in d.note, d.note


def test_nc_reads_of_a_global_variable_are_not_recorded_and_keep_the_cap():
    text = (KERNEL.replace("GLOBALS", ".global .align 4 .f32 tbl[64];\n").replace("EXTRA", "")
            .replace("DEST", "%rd4").replace("BASE", "%rd9")
            .replace("\tmov.u32 %r2, %tid.x;\n", "\tmov.u32 %r2, %tid.x;\n\tmov.u64 %rd9, tbl;\n"))
    m = parse(text)
    out = unrolled(m)
    if unproven_nc(m, out) is None:
        pytest.skip("the read-only analysis proves the table's copies")
    d = decide(m, out, "k", LAUNCH)
    assert d.verdict is Verdict.INCONCLUSIVE and "not recorded" in d.note, d.note


def test_a_proof_capped_by_the_assumption_falls_back_to_the_footprints():
    """A constant trip count: the prover proves the unroll, but a proof runs no
    launch, so it cannot lift the .nc cap; the interpreter's footprints then
    decide (as for an unproved unroll), and the note says it was proved."""
    m = parse(KERNEL.replace("GLOBALS", "").replace("EXTRA", "").replace("DEST", "%rd4").replace("BASE", "%rd3")
              .replace("\tld.param.u32 %r1, [n];\n", "\tmov.u32 %r1, 8;\n"))
    d = decide(m, unrolled(m), "k", LAUNCH)
    assert d.verdict is Verdict.EQUAL and EVIDENCE in d.note, d.note
    assert f"prover: proved, but {ASSUMES_NOALIAS}" in d.note


def test_footprint_bits():
    """The interpreter layer: .nc loads set NC_READ, the original's other
    loads COHERENT_READ, stores STORED."""
    from ptxopt.equivalence.nc_reads import with_nc_tags
    from ptxopt.interp import Program

    extra = "\tld.global.f32 %f3, [%rd3+4];\n\tadd.f32 %f1, %f1, %f3;\n"
    p = Program(kernel(extra))
    a, out = np.arange(64, dtype=np.float32), np.zeros(32, dtype=np.float32)
    r = run_kernel(p, "k", 1, 32, [a, out, 3], reads=with_nc_tags({}, p, coherent=True))
    ra, ro = r.reads["a"].reshape(-1, 4)[:, 0], r.reads["out"].reshape(-1, 4)[:, 0]
    assert all(ra[:3] & NC_READ) and not any(ra[3:] & NC_READ)
    assert ra[1] & COHERENT_READ and not ra[0] & COHERENT_READ
    assert all(ro & STORED) and not any(ro & (NC_READ | OTHER_READ))
    assert r.nc_unrecorded == 0


def test_corpus_matmul_naive_unroll_is_equal():
    """nvcc's matmul_naive reads A and B through .nc; unroll_2 copies its
    loop (10 .nc loads become 18). Before: inconclusive (assumes noalias)."""
    spec = corpus.get("cuda_matmul_naive")
    m = parse(spec.ptx_text(), spec.path)
    out = unrolled(m)
    assert unproven_nc(m, out) is not None
    d = decide(m, out, spec.entry, from_spec(spec))
    assert d.verdict is Verdict.EQUAL and d.note.startswith(EVIDENCE), d.note


def test_corpus_saxpy_forced_rewrite_stays_capped():
    spec = corpus.get("cuda_saxpy")
    m = parse(spec.ptx_text())
    out, _ = NcLd(assume_noalias=1).apply(m)
    d = decide(m, out, "saxpy", from_spec(spec))
    assert d.verdict is Verdict.INCONCLUSIVE and ASSUMES_NOALIAS in d.note
    assert d.result.nc_reads is None  # a conversion of the original's own load: nothing recorded


def test_cli_verify_carries_the_assumption(tmp_path):
    """``ptxopt verify`` reports the same: the forced rewrite is inconclusive
    (exit 4; before: "equivalent", exit 0), the unrolled copies equivalent
    with the evidence."""
    from cli_helpers import run_cli

    m = kernel("\tld.global.f32 %f3, [%rd3+256];\n\tadd.f32 %f1, %f1, %f3;\n")
    files = {}
    for name, mod in (("o", m), ("forced", NcLd(assume_noalias=1).apply(m)[0]), ("unrolled", unrolled(m))):
        files[name] = tmp_path / f"{name}.ptx"
        files[name].write_text(emit(mod))
    args = ["--grid", "1", "--block", "32", "--scalar", "n=19", "--buffer-bytes", "512", "--no-ptxas"]
    r = run_cli("verify", files["o"], files["forced"], *args)
    assert r.exit_code == 4 and ASSUMES_NOALIAS in r.output, r.output
    r = run_cli("verify", files["o"], files["unrolled"], *args)
    assert r.exit_code == 0 and EVIDENCE in r.output, r.output


def test_nc_reads_evidence_needs_every_launch_and_some_nc_read():
    from ptxopt.equivalence.nc_reads import NcReads

    nc, plain = np.uint32(NC_READ), np.uint32(OTHER_READ | COHERENT_READ)
    orig = {"a": np.array([nc, nc, plain, 0], dtype=np.uint32)}
    r = NcReads()
    r.add(orig, {"a": np.array([nc, nc, 0, 0], dtype=np.uint32)}, 0, "launch 0")
    assert r.evidence(1) and not r.evidence(2)  # one launch of two compared: no evidence
    r.add(orig, {"a": np.array([0, 0, 0, 0], dtype=np.uint32)}, 0, "launch 1")
    assert r.evidence(2)
    empty = NcReads()
    empty.add(orig, {"a": np.zeros(4, dtype=np.uint32)}, 0, "launch 0")
    assert empty.evidence(1) is None and "no launch read" in empty.shortfall(1)  # vacuous: refused
    for cand, why in (([0, 0, nc, 0], "only through coherent loads"), ([0, 0, 0, nc], "never reads it"),
                      ([nc | np.uint32(STORED), 0, 0, 0], "a store writes it")):
        r = NcReads()
        r.add(orig, {"a": np.array(cand, dtype=np.uint32)}, 0, "launch 0")
        assert r.evidence(1) is None and why in r.shortfall(1)
    r = NcReads()
    r.add(orig, {"a": np.array([nc, 0, 0, 0], dtype=np.uint32)}, 1, "launch 0")  # a .global variable read
    assert r.evidence(1) is None and "not recorded" in r.shortfall(1)


def test_no_recording_when_the_original_reads_nothing_through_nc():
    """An original without .nc loads: any byte a new .nc load reads is new, so
    the check does not record footprints at all (no cost), and the cap stays."""
    m = parse(emit(kernel()).replace("ld.global.nc.f32", "ld.global.f32"))
    out, rep = NcLd(assume_noalias=1).apply(m)
    assert rep.changed
    d = decide(m, out, "k", LAUNCH)
    assert d.verdict is Verdict.INCONCLUSIVE and d.note.startswith(ASSUMES_NOALIAS)
    assert d.result is not None and d.result.nc_reads is None
