"""nc_ld and the read-only analysis: which loads may use ld.global.nc, what the
pass refuses and why, and that no check calls a rewrite it could not prove
read-only ``proved``/``equal`` (the assumption caps it at ``inconclusive``)."""

from pathlib import Path

import pytest

from ptxopt.kernels import corpus
from ptxopt import emit, parse
from ptxopt.analysis.readonly import ReadOnly
from ptxopt.equivalence.assumptions import unproven_nc
from ptxopt.equivalence.decision import ASSUMES_NOALIAS, assumption_cap, decide, hints_only, Decision
from ptxopt.equivalence.launch import Launch, Origin, from_spec
from ptxopt.equivalence.verdict import Verdict
from ptxopt.passes.base import Refused
from ptxopt.passes.readonly_path import NcLd, nc_form

ADV = Path(__file__).parents[1] / "adversarial"
HEAD = ".version 8.0\n.target sm_89\n.address_size 64\n"
ALIASING = ["nc_ld_store_other_param", "nc_ld_generic_store", "nc_ld_atomic", "nc_ld_callee_store"]


def adv(name: str):
    return parse((ADV / f"{name}.ptx").read_text())


def one(text: str):
    m = parse(HEAD + ".visible .entry k(.param .u64 p)\n{\n\t.reg .f32 %f<4>;\n\t.reg .b64 %rd<4>;\n\t"
              + text + "\n\tret;\n}\n")
    return next(m.entries[0].instructions())


@pytest.mark.parametrize("text, want", [
    ("ld.global.f32 %f1, [%rd1];", "ld.global.nc.f32"),
    ("ld.weak.global.f32 %f1, [%rd1];", "ld.global.nc.f32"),
    ("ld.global.cg.v2.f32 {%f1, %f2}, [%rd1];", "ld.global.cg.nc.v2.f32"),
    ("ld.global.L1::evict_last.b32 %f1, [%rd1];", "ld.global.nc.L1::evict_last.b32"),
    ("ld.global.cs.L2::128B.u64 %rd2, [%rd1];", "ld.global.cs.nc.L2::128B.u64"),
])
def test_nc_forms(text, want):
    assert nc_form(one(text)).full_opcode == want


@pytest.mark.parametrize("text, why", [
    ("ld.volatile.global.f32 %f1, [%rd1];", ".volatile"),
    ("ld.acquire.gpu.global.f32 %f1, [%rd1];", ".acquire"),
    ("ld.global.cv.f32 %f1, [%rd1];", ".cv"),
    ("ld.global.lu.f32 %f1, [%rd1];", ".lu"),
    ("ld.f32 %f1, [%rd1];", "not a .global load"),
])
def test_forms_without_nc_are_refused(text, why):
    with pytest.raises(Refused, match=why.replace(".", r"\.")):
        nc_form(one(text))


@pytest.mark.parametrize("name", ALIASING)
def test_pass_refuses_when_the_kernel_may_write_the_buffer(name):
    m = adv(name)
    out, rep = NcLd().apply(m)
    assert not rep.changed and rep.refused
    assert "may be written" in rep.refused[0].what
    assert not any("nc" in i.modifiers for f in out.functions for i in f.instructions())


@pytest.mark.parametrize("name", ALIASING)
def test_forced_rewrite_is_an_unproven_assumption(name):
    m = adv(name)
    out, rep = NcLd(assume_noalias=1).apply(m)
    assert rep.changed and "assumes noalias" in rep.changed[0].what
    assert unproven_nc(m, out) is not None
    # whatever a checker found, the assumption caps it
    for v in (Verdict.PROVED, Verdict.EQUAL):
        d = assumption_cap(m, out, Decision(v, "checked"))
        assert d.verdict is Verdict.INCONCLUSIVE and d.note.startswith(ASSUMES_NOALIAS)
    assert assumption_cap(m, out, Decision(Verdict.DIFFER, "x")).verdict is Verdict.DIFFER


def test_nc_is_not_a_hint():
    """.nc changes what a load may return: the hints-only shortcut never covers it."""
    m = adv("nc_ld_readonly_table")
    out, _ = NcLd().apply(m)
    assert "ld.global.nc" in emit(out)
    assert hints_only(m, out) is None


def test_proven_rewrite_is_checked_normally():
    m = adv("nc_ld_readonly_table")
    out, rep = NcLd().apply(m)
    assert len(rep.changed) == 1 and "assumes" not in rep.changed[0].what
    assert unproven_nc(m, out) is None
    launch = Launch((1, 1, 1), (32, 1, 1), origin=Origin.CONTRACT, source="test")
    d = decide(m, out, "nc_readonly_table", launch)
    assert d.verdict in (Verdict.PROVED, Verdict.EQUAL), d.note


def test_aliasing_launch_is_not_called_equal():
    """The interpreter runs one coherent memory: on the forced rewrite of a
    kernel that stores through another parameter it finds nothing different
    (the old behaviour: ``equal``). The verdict must carry the assumption."""
    m = adv("nc_ld_store_other_param")
    out, _ = NcLd(assume_noalias=1).apply(m)
    launch = Launch((1, 1, 1), (32, 1, 1), origin=Origin.CONTRACT, source="test")
    d = decide(m, out, "nc_store_other_param", launch)
    assert d.verdict is Verdict.INCONCLUSIVE
    assert d.note.startswith(ASSUMES_NOALIAS) and "st.global.f32" in d.note


def test_corpus_saxpy_forced_rewrite_is_inconclusive():
    spec = corpus.get("cuda_saxpy")
    m = parse(spec.ptx_text())
    out, rep = NcLd(assume_noalias=1).apply(m)
    assert len(rep.changed) == 1  # y; x is already .nc in nvcc's output
    d = decide(m, out, "saxpy", from_spec(spec))
    assert d.verdict is Verdict.INCONCLUSIVE and ASSUMES_NOALIAS in d.note


def test_moving_nc_to_another_load_is_an_assumption():
    """The same number of .nc loads, on a different load: still new."""
    text = HEAD + """.global .align 4 .f32 tbl[4];
.global .align 4 .f32 out[4];
.visible .entry k(.param .u64 p)
{
	.reg .f32 %f<4>;
	.reg .b64 %rd<4>;
	ld.param.u64 %rd1, [p];
	ld.global.nc.f32 %f1, [tbl];
	ld.global.f32 %f2, [%rd1];
	add.f32 %f3, %f1, %f2;
	st.global.f32 [out], %f3;
	ret;
}
"""
    m = parse(text)
    moved = parse(text.replace("ld.global.nc.f32 %f1, [tbl]", "ld.global.f32 %f1, [tbl]")
                  .replace("ld.global.f32 %f2, [%rd1]", "ld.global.nc.f32 %f2, [%rd1]"))
    assert unproven_nc(m, moved) is not None
    assert unproven_nc(moved, m) is None  # only `out` is written: tbl is proven read-only


def test_nc_in_a_device_function_is_an_assumption():
    text = HEAD + """.func f(.param .b64 p)
{
	.reg .f32 %f<2>;
	.reg .b64 %rd<2>;
	ld.param.b64 %rd1, [p];
	ld.global.f32 %f1, [%rd1];
	ret;
}
"""
    m = parse(text)
    assert unproven_nc(m, parse(text.replace("ld.global.f32", "ld.global.nc.f32"))) is not None
    out, rep = NcLd().apply(m)  # the pass leaves device functions alone
    assert not rep.changed and emit(out) == emit(m)


def test_extern_callee_writes_anything():
    text = HEAD + """.global .align 4 .f32 tbl[4];
.extern .func g();
.visible .entry k()
{
	.reg .f32 %f<2>;
	ld.global.f32 %f1, [tbl];
	call g, ();
	ret;
}
"""
    m = parse(text)
    ro = ReadOnly(m, m.entries[0])
    assert ro.may_write(next(m.entries[0].instructions())) is not None


def test_shared_and_local_stores_do_not_reach_global():
    text = HEAD + """.global .align 4 .f32 tbl[4];
.visible .entry k(.param .u64 p)
{
	.reg .f32 %f<2>;
	.reg .b64 %rd<2>;
	.shared .f32 s[4];
	.local .f32 l[4];
	ld.global.f32 %f1, [tbl];
	st.shared.f32 [s], %f1;
	st.local.f32 [l], %f1;
	atom.shared.add.f32 %f1, [s], %f1;
	ret;
}
"""
    m = parse(text)
    ro = ReadOnly(m, m.entries[0])
    assert ro.writers == []
