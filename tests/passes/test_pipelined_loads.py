"""``swp_ld``: the fuzzer's tempting loop classes against the interpreter at
trip counts 0..24 (17 threads per launch), and mutants of the pass that the
oracle must catch (a prefetch without its predicate, a store ignored)."""

from __future__ import annotations

import pytest

from ptxopt import emit, parse
from ptxopt.passes import pipeline_loads
from ptxopt.passes.pipeline import Pipeline
from ptxopt.testing.pipelined_loads import CLASSES, MUST_REFUSE, MUTANTS, check_shape, make_shape

LEGAL = ("stream", "pointer_iv", "two_loads", "dependent", "guarded")


@pytest.mark.parametrize("cls", CLASSES)
def test_fuzz_class_is_equal_or_refused(cls):
    for seed in range(2):
        r = check_shape(make_shape(cls, seed), keep_refusals=True)
        assert not r.wrong, (cls, seed, r.wrong[:3])
        if cls in MUST_REFUSE:
            assert not r.applied and all(r.refused.values()), r.refused
        if cls == "guarded_loaded":
            assert all(any("the guard of the load" in w and "loaded in the loop" in w for w in ws)
                       for ws in r.refused.values()), r.refused
        if cls in LEGAL:
            assert len(r.applied) == 2, r.refused


def test_oracle_catches_an_unpredicated_prefetch(monkeypatch):
    """The prefetch of an iteration that does not run reads past the row: a fault."""
    monkeypatch.setattr(pipeline_loads.SwpLd, "_all", staticmethod(lambda conds, out, body, line: None))
    r = check_shape(make_shape("stream", 0))
    assert r.applied and any("fails" in w[2] for w in r.wrong), r.wrong


def _forget_memory_facts(monkeypatch):
    """The passes' loop facts without loop-carried memory dependences (copies:
    the manager's remembered facts stay true)."""
    from dataclasses import replace

    from ptxopt.analysis.loops import LoopInfo
    from ptxopt.analysis.manager import AnalysisManager

    real = AnalysisManager.loops

    def no_memory_facts(self, fn):
        info = real(self, fn)
        return LoopInfo(tuple(replace(lp, carried_mem=()) for lp in info.loops), info.irreducible)

    monkeypatch.setattr(AnalysisManager, "loops", no_memory_facts)


def test_oracle_catches_an_ignored_aliasing_store(monkeypatch):
    _forget_memory_facts(monkeypatch)
    r = check_shape(make_shape("store_alias", 0))
    assert r.applied
    assert any(n >= 0 and "->" in w for _, n, w in r.wrong), r.wrong  # stale values, not just "applied"


def test_prologue_and_predicate_come_from_the_exit_test():
    """A down-counting pointer loop (nvcc's form): the predicate of the prefetch is the exit test
    computed for the coming iterations, and the pointer is advanced by its own invariant step."""
    text = make_shape("pointer_iv", 0).text
    (p,) = Pipeline.parse("swp_ld{distance=2}").passes
    out, rep = p.apply(parse(text))
    assert rep.changed and not rep.refused
    loop = emit(out).split("L:")[1].split("@%p1 bra L;")[0]
    assert loop.count("add.s32") >= 3  # the counter, twice ahead, plus its own update
    assert "add.s64 \t%swp0_v" in loop and "%rd12;" in loop  # the pointer advanced by %rd12
    assert "and.pred" in loop


@pytest.mark.parametrize("distance", (1, 2))
def test_run_proves_the_rewrite(distance):
    """Structural: the pass manager's proof instrument proves it (``run`` writes it without
    --allow-unchecked); the unchecked runner still refuses it unless told."""
    from ptxopt.equivalence.prove.structural import StructuralProofs
    from ptxopt.passes.passmanager import PassManager, UnprovedStructuralRewrite, run_passes_unchecked

    text = make_shape("stream", 1).text
    proofs = StructuralProofs()
    PassManager(f"swp_ld_{distance}", instruments=[proofs]).run(parse(text))
    assert [x.verdict for x in proofs.proofs] == ["proved"], proofs.proofs
    with pytest.raises(UnprovedStructuralRewrite):
        run_passes_unchecked(text, f"swp_ld_{distance}")


# -- the proof (:mod:`ptxopt.equivalence.prove.swp_sim`) ------------------------------------------------

def _pipelined(cls: str, seed: int, pipe: str) -> tuple[str, str]:
    text = make_shape(cls, seed).text
    (p,) = Pipeline.parse(pipe).passes
    out, rep = p.apply(parse(text))
    assert rep.changed, rep.refused
    return text, emit(out)


@pytest.mark.parametrize("cls", LEGAL)
@pytest.mark.parametrize("pipe", ("swp_ld_1", "swp_ld_2"))
def test_legal_shapes_are_proved(cls, pipe):
    from ptxopt.equivalence.prove import prove

    text, cand = _pipelined(cls, 0, pipe)
    r = prove(text, cand)
    assert str(r.verdict) == "proved", r.reason


@pytest.mark.slow
@pytest.mark.parametrize("name", list(MUTANTS))
def test_wrong_pipelining_is_never_proved(name):
    """Hand-broken results of the pass: the proof must not call them equivalent (and the
    interpreter sees most of them differ or fault)."""
    from ptxopt.equivalence.prove import prove

    for cls in ("stream", "pointer_iv", "guarded"):
        text, cand = _pipelined(cls, 0, "swp_ld_2")
        bad = MUTANTS[name](cand)
        assert bad != cand, name
        r = prove(text, bad)
        assert str(r.verdict) != "proved", (name, cls)


def test_an_ignored_aliasing_store_is_not_proved(monkeypatch):
    from ptxopt.equivalence.prove import prove

    _forget_memory_facts(monkeypatch)
    text, cand = _pipelined("store_alias", 0, "swp_ld_1")
    r = prove(text, cand)
    assert str(r.verdict) != "proved"
    assert "invariant" in r.reason or "store" in r.reason or "memory" in r.reason, r.reason


def test_a_guarded_early_load_is_substituted_only_under_its_guard():
    """The trip's obligations put each carried register's invariant value into
    the header state (swp_sim._substitution): the load's term outright, or
    ``ite(guard, term, r)`` where the invariant holds only under the load's
    guard. Tempted here: the loop loads ``[a]`` under ``@p`` and again
    unguarded; the broken candidate reads the *guarded* early load's register
    where the unguarded one belongs. When ``p`` is false that register is
    stale, so the product differs; substituting the load's term without its
    guard would make it the unguarded load's very term and prove it (checked:
    that mutant proves it)."""
    from ptxopt.equivalence.prove import clear_memo, prove
    from ptxopt.passes.passmanager import run_passes_unchecked

    original = make_shape("guarded", 0).text.replace(
        "\tadd.u32 %r10, %r10, %r6;\n",
        "\tadd.u32 %r10, %r10, %r6;\n\tld.global.u32 %r12, [%rd7];\n\tmul.lo.u32 %r11, %r11, %r12;\n")
    cand = run_passes_unchecked(original, "swp_ld_1", allow_unchecked=True)
    guarded_use = "\t@%p2 mov.b32 \t%r6, %swp0_r1;\n"
    assert "\tmov.b32 \t%r12, %swp0_r3;\n" in cand and guarded_use in cand, cand
    bad = cand.replace("\tmov.b32 \t%r12, %swp0_r3;\n", "").replace(
        guarded_use, guarded_use + "\tmov.b32 \t%r12, %swp0_r1;\n")
    clear_memo()
    assert str(prove(original, cand).verdict) == "proved"
    clear_memo()
    r = prove(original, bad)
    assert str(r.verdict) != "proved", r.reason
