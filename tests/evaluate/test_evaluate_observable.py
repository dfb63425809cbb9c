"""Hint-only candidates (ptxopt.equivalence.observable): which annotations the
observable form drops, that the interpreter really ignores them, and that
the evaluator still runs any candidate whose code changed."""

from __future__ import annotations

from dataclasses import replace

import pytest

from ptxopt.kernels.corpus import get
from ptxopt.ptx.emit import emit
from ptxopt.evaluate import Candidate, evaluate
from ptxopt.equivalence import interpret as interpret_mod
from ptxopt.equivalence.observable import observable_form
from ptxopt.interp import Program
from ptxopt.ptx.ir import instruction_slots
from ptxopt.ptx.parser import parse
from ptxopt.passes.registry import get_pass_class
from ptxopt.passes.passmanager import PassManager
from ptxopt.passes.pipeline import Pipeline
from ptxopt.equivalence.interpret import verify

HINT_PASSES = ("cache_ca", "cache_cg", "cache_cs", "cache_cv", "st_cache_wb", "st_cache_wt", "st_cache_cs",
               "maxnreg_32", "maxnreg_64", "maxnreg_128", "maxnreg_255", "prefetch_L1", "prefetch_L2")
CODE_PASSES = ("vec_ld", "vec_st", "reorder_cp", "reorder_il", "reorder_lf", "reorder_sl", "split_ld")
# one thread; many threads with barriers and shared memory; Triton; a guarded loop
KERNELS = ("gemm_tile_4x4x4", "cuda_reduce_sum_smem", "triton_softmax_row", "cuda_saxpy")

BASE = """.version 8.8
.target sm_89
.address_size 64

.visible .entry k(.param .u64 p, .param .u64 q)
{directive}{{
	.reg .b32 %r<4>;
	.reg .b64 %rd<4>;
	// a comment
	ld.param.u64 %rd1, [p];
	ld.param.u64 %rd2, [q];
	cvta.to.global.u64 %rd1, %rd1;
	cvta.to.global.u64 %rd2, %rd2;
{prefetch}	ld.global{load}.u32 %r1, [%rd1];
	ld.global.nc.u32 %r2, [%rd1+4];
	add.s32 %r3, %r1, %r2;
	st.global{store}.u32 [%rd2], %r3;
	ret;
}}
"""


def _text(directive="", prefetch="", load="", store=""):
    return BASE.format(directive=directive, prefetch=prefetch, load=load, store=store)


def _form(text):
    return observable_form(parse(text))


@pytest.mark.parametrize("variant", [
    {"load": ".ca"}, {"load": ".cg"}, {"load": ".cs"}, {"load": ".lu"}, {"load": ".cv"},
    {"load": ".L1::evict_last"}, {"load": ".L1::no_allocate"}, {"load": ".L2::128B"},
    {"store": ".wb"}, {"store": ".wt"}, {"store": ".cs"}, {"store": ".L1::no_allocate"},
    {"directive": ".maxnreg 32\n"}, {"prefetch": "\tprefetch.global.L1 [%rd1];\n"},
    {"prefetch": "\tprefetch.global.L2 [%rd1+128];\n"}, {"prefetch": "\tprefetchu.L1 [%rd1];\n"},
])
def test_performance_annotations_are_not_observable(variant):
    assert _form(_text(**variant)) == _form(_text())
    assert _text(**variant) != _text()


@pytest.mark.parametrize("variant", [
    {"load": ".volatile"},  # ordering: a different memory-model meaning
    {"load": ".nc"},  # the non-coherent path may return what the kernel did not write
    {"prefetch": "\tadd.s32 %r0, %r0, 1;\n"},  # code, however harmless
])
def test_semantic_changes_are_observable(variant):
    assert _form(_text(**variant)) != _form(_text())


def test_comments_and_loc_are_not_observable():
    text = _text().replace("\tret;", "\t.loc 1 2 3\n\tret; // the end")
    assert _form(text) == _form(_text())


def _after(kernel, pipeline):
    m = parse(get(kernel).ptx_text())
    return m, PassManager(Pipeline.parse(pipeline)).run(m).module


@pytest.mark.parametrize("kernel", KERNELS)
def test_the_interpreter_agrees_that_hint_passes_change_nothing(kernel):
    """The claim behind the shortcut, checked against the interpreter itself:
    every hint pass that changes a kernel's text leaves its observable form,
    and the dynamic check finds the outputs equal."""
    spec = get(kernel)
    original = parse(spec.ptx_text())
    program, text = Program(original), emit(original)
    # the original's runs are the same for every pass: verify's ``reference`` memo runs them once
    # (as the evaluator does for the candidates of one original); each candidate still runs on every launch
    runs = {}
    changed = 0
    for name in HINT_PASSES:
        new = PassManager(Pipeline.parse(name)).run(original).module
        if emit(new) == text:
            continue
        changed += 1
        assert observable_form(new) == observable_form(original), name
        res = verify(program, Program(new), spec.entry, trials=2, spec=spec, reference=runs, reference_key=kernel)
        assert res.status == "equal", (name, res)
    assert changed >= 7  # every kernel has global loads and stores to annotate


@pytest.mark.parametrize("name", CODE_PASSES)
def test_code_passes_change_the_observable_form(name):
    changed = 0
    for kernel in ("gemm_tile_4x4x4",) + KERNELS + ("cuda_softmax_row", "triton_layernorm_row"):
        if name == "split_ld":  # split what vec_ld merged
            _, original = _after(kernel, "vec_ld")
            new = PassManager(Pipeline.parse("split_ld")).run(original).module
        else:
            original, new = _after(kernel, name)
        if emit(new) != emit(original):
            changed += 1
            assert observable_form(new) != observable_form(original), kernel
    assert changed


def test_the_evaluator_does_not_run_hint_only_candidates(tmp_path, monkeypatch):
    def boom(*a, **kw):
        raise AssertionError("the interpreter ran on a hint-only candidate")

    monkeypatch.setattr(interpret_mod, "verify", boom)  # decide() imports it from there when it runs
    for pipeline in ("cache_cg", "maxnreg_64", "prefetch_L1,st_cache_cs"):
        r = evaluate(Candidate.from_corpus("gemm_tile_2x2x2", pipeline), cache=tmp_path / "c.sqlite")
        assert r.ok and r.changed and r.equivalence == "hints-only", r
        assert "not run" in r.equivalence_note and r.timings["verify"] < 0.5
    r = evaluate(Candidate.from_corpus("gemm_tile_2x2x2", "vec_ld"), cache=None, prove=False)  # code: still run
    assert r.status == "internal" and "interpreter ran" in r.error


def test_a_hint_pass_that_also_breaks_code_is_still_caught(tmp_path, monkeypatch):
    cls = get_pass_class("cache_cg")
    real = cls.run

    def run(self, module):  # the real .cg rewrite, plus fma d, a, b, c -> fma d, a, b, a
        report = real(self, module)
        for fn in module.functions:
            for items, i, ins in instruction_slots(fn.body):
                if ins.opcode == "fma":
                    items[i] = replace(ins, operands=ins.operands[:3] + ins.operands[1:2])
                    return report
        return report

    monkeypatch.setattr(cls, "run", run)
    r = evaluate(Candidate.from_corpus("gemm_tile_2x2x2", "cache_cg"), cache=tmp_path / "c.sqlite")
    assert r.status == "mismatch" and r.equivalence == "differ", r
