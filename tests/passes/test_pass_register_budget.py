"""maxnreg_*: a register budget respects the source's directives and never
leaves a budget ptxas cannot meet behind as a pass failure."""

from pathlib import Path

import pytest

from ptxopt import emit, parse
from ptxopt.passes.register_budget import instruction_registers
from ptxopt.equivalence.instrument import VerifyEach
from ptxopt.passes.passmanager import PassManager
from ptxopt.passes.pipeline import Pipeline, make_pass
from ptxopt.toolchain import compile_ptx

DATA = Path(__file__).parents[1] / "data" / "contract"

KERNEL = """\
.version 8.8
.target sm_89
.address_size 64

.visible .entry k(
\t.param .u64 k_param_0
)
{directives}{{
\t.reg .f32 %f<4>;
\t.reg .b64 %rd<4>;
\tld.param.u64 %rd1, [k_param_0];
\tcvta.to.global.u64 %rd2, %rd1;
\tld.global.f32 %f1, [%rd2];
\tadd.f32 %f2, %f1, %f1;
\tst.global.f32 [%rd2], %f2;
\tret;
}}
"""


def kernel(*directives: str) -> str:
    return KERNEL.format(directives="".join(d + "\n" for d in directives))


def apply(pipeline: str, text: str):
    m = parse(text)
    p = Pipeline.parse(pipeline).passes[0]
    out, rep = p.apply(m)
    return out, rep


def test_sets_a_budget_where_the_source_has_none():
    out, rep = apply("maxnreg_128", kernel())
    assert out.entries[0].directive(".maxnreg").args == ("128",)
    assert [s.what for s in rep.changed] == ["set .maxnreg 128"] and not rep.refused


@pytest.mark.parametrize("pipeline", ["maxnreg_32", "maxnreg_128", "maxnreg_255"])
def test_a_source_maxnreg_is_never_raised_or_replaced(pipeline):
    """Triton set .maxnreg 64: maxnreg_128 must not replace it (the source's budget is a choice, not a default)."""
    out, rep = apply(pipeline, kernel(".maxnreg 64"))
    assert out.entries[0].directive(".maxnreg").args == ("64",)
    assert not rep.changed
    assert len(rep.refused) == 1
    assert "the source sets .maxnreg 64" in rep.refused[0].what
    assert "override=1" in rep.refused[0].what


def test_override_option_replaces_the_source_budget():
    out, rep = apply("maxnreg_128{override=1}", kernel(".maxnreg 64"))
    assert out.entries[0].directive(".maxnreg").args == ("128",)
    assert [s.what for s in rep.changed] == ["replaced .maxnreg 64 with 128"]
    p = Pipeline.parse("maxnreg_128{override=1}")
    assert Pipeline.parse(str(p)) == p and p.passes[0].override is True
    assert str(Pipeline.parse("maxnreg_128{override=0}")) == "maxnreg_128"


def test_same_budget_as_the_source_is_a_quiet_no_op():
    out, rep = apply("maxnreg_64", kernel(".maxnreg 64"))
    assert not rep.changed and not rep.refused
    assert emit(out) == emit(parse(kernel(".maxnreg 64")))


def test_block_size_directives_are_kept_and_bound_the_budget():
    src = kernel(".maxntid 256, 1, 1", ".minnctapersm 4")
    out, rep = apply("maxnreg_128", src)  # 65536 / (256 * 4) = 64 < 128
    assert not rep.changed and "allows at most 64 registers" in rep.refused[0].what
    out, rep = apply("maxnreg_64", src)
    d = {x.name: x.args for x in out.entries[0].directives}
    assert d == {".maxntid": ("256", "1", "1"), ".minnctapersm": ("4",), ".maxnreg": ("64",)}
    out, rep = apply("maxnreg_255", kernel(".reqntid 1024"))
    assert "reqntid 1024 allows at most 64" in rep.refused[0].what
    assert out.entries[0].directive(".reqntid").args == ("1024",)


def test_option_is_documented_in_the_description():
    for name in ("maxnreg_32", "maxnreg_64", "maxnreg_128", "maxnreg_255"):
        d = make_pass(name).description
        assert "override=1" in d and not d.endswith(".")


def test_an_instruction_wider_than_the_budget_is_refused_statically():
    text = (DATA / "mma_f64_wide.ptx").read_text()
    m = parse(text)
    assert instruction_registers(m.entries[0])[0] == 40
    out, rep = apply("maxnreg_32", text)
    assert not rep.changed and "names 40 registers at once" in rep.refused[0].what
    out, rep = apply("maxnreg_64", text)
    assert rep.changed
    compile_ptx(emit(out), "sm_90")


def test_ptxas_failing_a_budget_reverts_the_pass_under_verify_each():
    """32 operand registers pass the static bound, but ptxas cannot compile
    the f64 mma under .maxnreg 32: a refusal with ptxas' reason, not a
    PassFailure with a reproducer."""
    text = (DATA / "mma_f64_budget.ptx").read_text()
    m = parse(text)
    _, rep = apply("maxnreg_32", text)
    assert rep.changed  # the static check alone lets it through
    ve = VerifyEach(equivalence=False)
    res = PassManager("maxnreg_32", instruments=[ve]).run(m)
    rec = res.records[0]
    assert not res.changed and not rec.changed
    assert "register target constraints" in rec.reverted
    assert "reverted" in rec.report.refused[0].what and "set .maxnreg 32" in rec.report.refused[0].what
    assert res.module.entries[0].directive(".maxnreg") is None
    assert res.to_json()["passes"][0]["reverted"] == rec.reverted


def test_insufficient_registers_fatal_reverts_too_and_later_passes_still_run():
    text = (DATA / "mma_f16.ptx").read_text()
    m = parse(text)
    pl = Pipeline.parse("maxnreg{n=24},cache_cg")
    res = PassManager(pl, instruments=[VerifyEach(equivalence=False)]).run(m)
    budget, cache = res.records
    assert "Insufficient registers" in budget.reverted and not budget.changed
    assert cache.changed  # the pipeline went on from the module before the budget
    assert res.module.entries[0].directive(".maxnreg") is None and "ld.global.cg" in emit(res.module)


SETMAXNREG = """\
.version 8.0
.target sm_90a
.address_size 64

.func grow()
{{
\tsetmaxnreg.inc.sync.aligned.u32 232;
\tret;
}}

.func middle()
{{
\tcall grow, ();
\tret;
}}

.visible .entry k(.param .u64 out)
.maxntid 128, 1, 1
{{
\t.reg .b32 %r<4>;
\t.reg .b64 %rd<4>;
{body}\tld.param.u64 %rd1, [out];
\tcvta.to.global.u64 %rd2, %rd1;
\tmov.u32 %r1, %tid.x;
\tst.global.u32 [%rd2], %r1;
\tret;
}}
"""


@pytest.mark.parametrize("body, via", [
    ("\tsetmaxnreg.dec.sync.aligned.u32 40;\n", None),
    ("\tcall grow, ();\n", "grow"),
    ("\tcall middle, ();\n", "grow"),  # two calls deep
    ("\t{\n\tsetmaxnreg.inc.sync.aligned.u32 232;\n\t}\n", None),  # in a nested scope
])
@pytest.mark.parametrize("pipeline", ["maxnreg_64", "maxnreg_255", "maxnreg{n=100,override=1}"])
def test_a_kernel_using_setmaxnreg_is_refused_with_a_reason(body, via, pipeline):
    text = SETMAXNREG.format(body=body)
    out, rep = apply(pipeline, text)
    assert out.entries[0].directive(".maxnreg") is None and not rep.changed
    (r,) = rep.refused
    assert "setmaxnreg" in r.what and ((via is None) == ("through" not in r.what)), r.what
    if via:
        assert via in r.what


def test_a_function_using_setmaxnreg_that_is_never_called_does_not_refuse():
    out, rep = apply("maxnreg_64", SETMAXNREG.format(body=""))
    assert out.entries[0].directive(".maxnreg").args == ("64",) and not rep.refused
