"""The compile memo of :func:`ptxopt.toolchain.compile_ptx`: a repeated
compile does not run ptxas again, returns an equal but independent result,
and a rejection is raised again; ``memo=False`` always runs ptxas."""

from __future__ import annotations

import pytest

from ptxopt.toolchain import PtxasError, ptxas as ptxas_mod
from ptxopt.evaluate import EvaluationSession
from ptxopt.toolchain.locate import installed_ptxas

pytestmark = pytest.mark.skipif(not installed_ptxas(), reason="no ptxas wheel installed")

PTX = """.version 8.8
.target sm_89
.address_size 64
.visible .entry k(.param .u64 p)
{
\t.reg .b64 %rd<3>;
\t.reg .f32 %f<3>;
\tld.param.u64 %rd1, [p];
\tcvta.to.global.u64 %rd2, %rd1;
\tld.global.f32 %f1, [%rd2];
\tadd.f32 %f2, %f1, %f1;
\tst.global.f32 [%rd2], %f2;
\tret;
}
"""


@pytest.fixture
def runs(monkeypatch):
    ptxas_mod.clear_memo()
    calls = []
    real = ptxas_mod.run_tool

    def counting(argv, **kw):
        calls.append(argv)
        return real(argv, **kw)

    monkeypatch.setattr(ptxas_mod, "run_tool", counting)
    yield calls
    ptxas_mod.clear_memo()


def test_repeat_compile_is_answered_from_the_memo(runs):
    a = ptxas_mod.compile_ptx(PTX, "sm_89")
    a.kernels.clear()  # a caller mutating its copy must not reach the next caller
    b = ptxas_mod.compile_ptx(PTX, "sm_89")
    assert len(runs) == 1
    assert b.kernels["k"].registers > 0 and b.cubin
    # another arch, other flags or another text is another compile
    ptxas_mod.compile_ptx(PTX, "sm_90")
    ptxas_mod.compile_ptx(PTX, "sm_89", extra_args=["-O1"])
    ptxas_mod.compile_ptx(PTX.replace("add.f32", "mul.f32"), "sm_89")
    assert len(runs) == 4
    c = ptxas_mod.compile_ptx(PTX, "sm_89", memo=False)
    assert len(runs) == 5 and c.kernels == b.kernels and c.cubin == b.cubin


def test_rejection_is_remembered_and_raised_again(runs):
    bad = PTX.replace("add.f32 %f2, %f1, %f1", "add.f32 %f2, %f1, %nosuch")
    with pytest.raises(PtxasError) as first:
        ptxas_mod.compile_ptx(bad, "sm_89")
    with pytest.raises(PtxasError) as second:
        ptxas_mod.compile_ptx(bad, "sm_89")
    assert len(runs) == 1
    assert second.value is not first.value
    assert second.value.diagnostics == first.value.diagnostics and second.value.line == first.value.line


def test_memo_is_bounded(runs, monkeypatch):
    monkeypatch.setattr(ptxas_mod, "MEMO_ENTRIES", 2)
    texts = [PTX.replace("add.f32 %f2, %f1, %f1", f"add.f32 %f2, %f1, 0f3F80000{i}") for i in range(3)]
    for t in texts:
        ptxas_mod.compile_ptx(t, "sm_89")
    assert len(EvaluationSession.current().compiles) == 2
    ptxas_mod.compile_ptx(texts[0], "sm_89")  # evicted: compiled again
    assert len(runs) == 4
