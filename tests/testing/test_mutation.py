"""The mutation operators make real changes, and the verifier tells the
mutants of a small corpus kernel apart from it (the mutation campaign, in
small: benchmarks/reports/mutation_campaign.py runs it on every nvcc/Triton kernel)."""

import pytest

from ptxopt import emit, parse
from ptxopt.kernels.corpus import get
from ptxopt.testing.mutants import OPERATORS, mutants
from ptxopt.equivalence.interpret import verify


@pytest.fixture(scope="module")
def reduce_kernel():
    spec = get("cuda_reduce_sum_smem")
    return spec, parse(spec.ptx_text())


def test_every_operator_applies_and_changes_the_text(reduce_kernel):
    spec, m = reduce_kernel
    ms = mutants(m, spec.entry, per_operator=2)
    assert {mu.operator for mu in ms} == set(OPERATORS)
    base = emit(m)
    assert all(emit(mu.module) != base for mu in ms)
    assert emit(m) == base  # the original is untouched


def test_saxpy_mutants_all_differ():
    spec = get("cuda_saxpy")
    m = parse(spec.ptx_text())
    ms = [mu for mu in mutants(m, spec.entry, per_operator=2) if mu.operator != "drop_barrier"]
    assert ms
    verdicts = {(mu.operator, mu.what): verify(m, mu.module, spec.entry, spec=spec).status for mu in ms}
    assert all(v in ("mismatch", "error") for v in verdicts.values()), verdicts


def test_constant_mutants_change_the_value_not_only_the_spelling():
    """-inf * 1.5 + 1 is -inf: softmax_row's ``mov.f32 %f31, 0fFF800000``
    once gave a "mutant" equal to its original (the prover proved it)."""
    spec = get("cuda_softmax_row")
    m = parse(spec.ptx_text())
    ms = mutants(m, spec.entry, per_operator=50, operators=("constant",))
    at_inf = [mu for mu in ms if mu.line == 37]
    assert at_inf, [mu.line for mu in ms]
    for mu in ms:
        assert mu.what.split("-> ")[1] != "0fFF800000", mu.what


def test_reviewed_mutants_exist_and_say_why():
    """Every mutant benchmarks/mutation_reviewed.json calls equivalent (or a
    known or closed hole) is one the campaign generates, with a justification: the
    list cannot silently drift from the generator."""
    import json
    from pathlib import Path

    data = json.loads((Path(__file__).resolve().parents[2] / "benchmarks" / "mutation_reviewed.json").read_text())
    entries = data["equivalent"] + data["holes"] + data.get("closed_holes", [])
    assert data["equivalent"]
    for e in entries:
        assert len(e["why"]) > 20, e
        spec = get(e["kernel"])
        if e.get("operator") == "loop":  # a loop mutant of the campaign's --loops 4
            from ptxopt.testing.loop_mutants import loop_mutants

            ms = loop_mutants(parse(spec.ptx_text()), spec.entry, 4)
        else:
            # generated at 2 per operator, or at the count the entry names (the campaign's default 3
            # samples other sites than 2)
            ms = mutants(parse(spec.ptx_text()), spec.entry, per_operator=e.get("per_operator", 2))
        assert any(mu.line == e["line"] and mu.what == e["what"] for mu in ms), e


def test_misaligned_load_mutants_are_not_proved():
    """A dead half-width load inside an original access, misaligned for its
    own width: covered bytes, but it faults; the prover once proved these."""
    from ptxopt.equivalence.prove import prove

    spec = get("cuda_saxpy")
    m = parse(spec.ptx_text())
    ms = mutants(m, spec.entry, per_operator=3, operators=("misalign",))
    assert ms and all("misaligned" in mu.what for mu in ms)
    for mu in ms:
        r = prove(emit(m), emit(mu.module), entry=spec.entry)
        assert r.verdict != "proved" and "aligned" in r.reason, (mu.what, r.reason)


def test_loop_mutants_of_a_corpus_kernel_are_caught():
    """The loop mutants (ptxopt.testing.loop_mutants, the campaign's
    ``--loops``) of a Triton countdown loop unrolled by 2: each runs away or
    computes something else at one of the boundary trip counts (the
    contract's ``iters = 2`` alone is even, where a dropped guard is harmless)."""
    from ptxopt.testing.loop_mutants import loop_mutants

    spec = get("gen_reduce_partial_00")
    m = parse(spec.ptx_text())
    ms = loop_mutants(m, spec.entry, 2)
    assert {mu.operator for mu in ms} == {"remainder_bound", "dropped_guard", "off_by_one_step"}
    for mu in ms:
        r = verify(m, mu.module, spec.entry, spec=spec, max_steps=20000)
        assert r.status in ("mismatch", "error"), (mu.operator, r.status, r.error)
        if mu.operator == "dropped_guard":  # harmless at the contract's even trip count: an extra launch
            assert "extra" in r.launches[-1], r.launches[-1]  # (iters = 1: tail or trip scalars) caught it
