"""The pass API, registry, pipeline strings and the pass manager."""

import io

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ptxopt import emit, parse
from ptxopt.kernels.corpus import get
from ptxopt.passes import pass_kinds, pass_names, pass_registry
from ptxopt.passes.families import EXCLUSIVE_FAMILIES, VECTORIZE
from ptxopt.equivalence.instrument import VerifyEach
from ptxopt.passes.passmanager import PassFailure, PassManager, PrintChanged, Stats
from ptxopt.passes.passmanager import run_passes_unchecked as optimize
from ptxopt.passes.pipeline import Pipeline, PipelineError, make_pass

EXPECTED_ORDER = [
    "vec_ld", "vec_st", "split_ld", "cache_ca", "cache_cg", "cache_cs", "cache_cv",
    "st_cache_wb", "st_cache_wt", "st_cache_cs", "maxnreg_32", "maxnreg_64", "maxnreg_128",
    "maxnreg_255", "reorder_cp", "reorder_il", "reorder_lf", "reorder_sl", "prefetch_L1", "prefetch_L2",
    "launch_bounds_2", "nc_ld", "unroll_2", "unroll_4",  # added after the first 20: last, so their places stay
    "loop_version_2", "loop_version_4", "swp_ld_1", "swp_ld_2",
]


def test_registry_keys_are_kinds_and_named_passes_keep_their_order():
    reg = pass_registry()
    assert list(reg) == pass_kinds()
    for key, factory in reg.items():
        assert factory().kind == key
    assert pass_names() == EXPECTED_ORDER  # `ptxopt passes`, golden dirs, benchmarks
    for name in pass_names():
        p = make_pass(name)
        assert p.name == str(p) == name
        assert p.family in EXCLUSIVE_FAMILIES | {VECTORIZE}
        assert p.description and not p.description.endswith(".")


def test_pipeline_round_trips_and_is_canonical():
    p = Pipeline.parse(" vec_ld , maxnreg_128,cache_cg ")
    assert str(p) == "vec_ld,maxnreg_128,cache_cg"
    assert Pipeline.parse(str(p)) == p
    assert str(Pipeline.parse("")) == ""


def test_pipeline_options_canonical_and_typed():
    p = Pipeline.parse("vec_ld{assume_align=16}")
    assert p.passes[0].assume_align == 16
    assert str(p) == "vec_ld{assume_align=16}"
    assert str(Pipeline.parse("vec_ld{assume_align=0}")) == "vec_ld"  # default is not printed
    with pytest.raises(PipelineError, match="no option 'bogus'"):
        Pipeline.parse("vec_ld{bogus=1}")
    with pytest.raises(PipelineError, match="not a valid int"):
        Pipeline.parse("vec_ld{assume_align=lots}")


def test_unknown_pass_lists_valid_names_in_one_line():
    with pytest.raises(PipelineError) as e:
        Pipeline.parse("vec_ld,frobnicate")
    msg = str(e.value)
    assert "frobnicate" in msg and "\n" not in msg
    assert all(n in msg for n in EXPECTED_ORDER)


@pytest.mark.parametrize("a,b,family", [
    ("cache_cg", "cache_cs", "load-cache-hint"), ("st_cache_wb", "st_cache_cs", "store-cache-hint"),
    ("maxnreg_32", "maxnreg_255", "register-budget"), ("reorder_cp", "reorder_lf", "reorder"),
    ("prefetch_L1", "prefetch_L2", "prefetch"),
])
def test_conflicting_family_names_both_passes(a, b, family):
    with pytest.raises(PipelineError) as e:
        Pipeline.parse(f"{a},vec_st,{b}")
    assert a in str(e.value) and b in str(e.value) and family in str(e.value)


def test_vec_ld_and_split_ld_conflict_but_vectorize_composes():
    with pytest.raises(PipelineError, match="split_ld"):
        Pipeline.parse("split_ld,vec_ld")
    assert len(Pipeline.parse("vec_ld,vec_st")) == 2


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(EXPECTED_ORDER), max_size=6))
def test_random_pipelines_parse_iff_no_conflict(names):
    text = ",".join(names)
    families = [make_pass(n).family for n in names]
    exclusive = [f for f in families if f in EXCLUSIVE_FAMILIES]
    conflicted = len(exclusive) != len(set(exclusive)) or {"vec_ld", "split_ld"} <= set(names)
    if conflicted:
        with pytest.raises(PipelineError):
            Pipeline.parse(text)
    else:
        assert str(Pipeline.parse(text)) == text


def test_apply_leaves_input_untouched_and_second_application_is_a_no_op():
    m = parse(get("gemm_tile_2x2x2").ptx_text())
    before = emit(m)
    p = make_pass("cache_cg")
    out, rep = p.apply(m)
    assert emit(m) == before
    assert len(rep.changed) == 8 and not rep.refused
    again, rep2 = p.apply(out)
    assert not rep2.changed_any and emit(again) == emit(out)


def test_pass_manager_verify_each_print_changed_and_stats():
    m = parse(get("gemm_tile_2x2x2").ptx_text())
    err = io.StringIO()
    res = PassManager("cache_cg,maxnreg_64", instruments=[VerifyEach(), PrintChanged(err), Stats(err)]).run(m)
    assert res.changed and [r.name for r in res.records] == ["cache_cg", "maxnreg_64"]
    text = err.getvalue()
    assert "+.maxnreg 64" in text and "-\tld.global.f32" in text
    assert "cache_cg: 8 changed, 0 refused" in text


def test_bisect_limit_skips_later_passes():
    m = parse(get("gemm_tile_2x2x2").ptx_text())
    res = PassManager("cache_cg,maxnreg_64", bisect_limit=1).run(m)
    assert [r.skipped for r in res.records] == ["", "bisect"]
    assert ".maxnreg" not in emit(res.module)


def test_a_crashing_pass_writes_a_reproducer(tmp_path, monkeypatch):
    from ptxopt.passes.cache_hints import CacheLd

    def boom(self, module):
        raise RuntimeError("boom")

    monkeypatch.setattr(CacheLd, "run", boom)
    m = parse(get("gemm_tile_2x2x2").ptx_text())
    with pytest.raises(PassFailure) as e:
        PassManager("maxnreg_64,cache_cg", reproducer_dir=tmp_path).run(m)
    repro = e.value.reproducer
    assert repro is not None and repro.parent == tmp_path
    text = repro.read_text()
    assert "boom" in text and "--passes 'maxnreg_64,cache_cg'" in text
    assert parse(text).items == m.items  # the reproducer holds the pipeline's *input*


def test_verify_each_catches_ptxas_rejection(tmp_path, monkeypatch):
    from ptxopt.ptx.ir import Instruction
    from ptxopt.passes.cache_hints import CacheLd

    orig = CacheLd.run

    def broken(self, module):
        rep = orig(self, module)
        module.entries[0].body.items.insert(-1, Instruction("mov", ("u32",), ()))  # no operands
        return rep

    monkeypatch.setattr(CacheLd, "run", broken)
    m = parse(get("gemm_tile_2x2x2").ptx_text())
    with pytest.raises(PassFailure, match="ptxas rejects"):
        PassManager("cache_cg", instruments=[VerifyEach()], reproducer_dir=tmp_path).run(m)


def test_optimize_library_entry_point():
    out = optimize(get("gemm_tile_2x2x2").ptx_text(), "st_cache_wt")
    assert out.count("st.global.wt.f32") == 4


def test_verify_each_catches_a_miscompiling_pass(tmp_path, monkeypatch):
    """A pass that swaps FMA operands compiles fine; only equivalence catches it."""
    from dataclasses import replace

    from ptxopt.ptx.ir import instruction_slots
    from ptxopt.passes.cache_hints import CacheLd

    orig = CacheLd.run

    def swap_first_fma(self, module):
        rep = orig(self, module)
        for items, i, ins in instruction_slots(module.entries[0].body):
            if ins.opcode == "fma":
                d, a, b, c = ins.operands
                items[i] = replace(ins, operands=(d, a, c, b))
                break
        return rep

    monkeypatch.setattr(CacheLd, "run", swap_first_fma)
    m = parse(get("gemm_tile_2x2x2").ptx_text())
    with pytest.raises(PassFailure, match="computes something else"):
        PassManager("cache_cg", instruments=[VerifyEach()], reproducer_dir=tmp_path).run(m)
    # ptxas alone would not have noticed
    PassManager("cache_cg", instruments=[VerifyEach(equivalence=False)]).run(m)


def test_a_pass_declares_its_conflicts_in_its_own_class():
    """``vec_ld`` says in its class that it and ``split_ld`` undo each other; the
    pipeline refuses the pair in either order with that reason, and a kind a
    class does not name is no conflict."""
    from ptxopt.passes.families import conflict
    from ptxopt.passes.pipeline import Pipeline, PipelineError
    from ptxopt.passes.registry import get_pass_class

    vec, split, vst = (get_pass_class(k)() for k in ("vec_ld", "split_ld", "vec_st"))
    assert get_pass_class("vec_ld").conflicts == {"split_ld": "vec_ld and split_ld undo each other"}
    assert "undo each other" in conflict(vec, split) and "undo each other" in conflict(split, vec)
    assert conflict(vec, vst) is None
    for text in ("vec_ld,split_ld", "split_ld,vec_ld"):
        with pytest.raises(PipelineError, match="undo each other"):
            Pipeline.parse(text)
