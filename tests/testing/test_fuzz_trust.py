"""The trust-class fuzzer (:mod:`ptxopt.testing.trust_fuzz`): every class of
false trust it knows is generated, its cases are valid PTX, its oracles can fail, and
the classes fixed so far have no findings. ``benchmarks/reports/fuzz_trust.py`` runs
the campaign (30 seeds per class: about a minute)."""

from __future__ import annotations

import pytest

from ptxopt.testing import trust_fuzz
from ptxopt.testing.trust_fuzz import CLASSES, check_case, make_case
from ptxopt.toolchain import compile_ptx

SEEDS = range(3)

@pytest.mark.parametrize("cls", CLASSES)
def test_cases_are_valid_ptx_and_deterministic(cls):
    for s in SEEDS:
        c = make_case(cls, s)
        assert c == make_case(cls, s)
        compile_ptx(c.original, "sm_89")
        if c.candidate is not None and cls != "misaligned":  # (ptxas does not check alignment anyway)
            compile_ptx(c.candidate, "sm_89")
        assert (c.candidate is None) != (not c.pipelines)


@pytest.mark.parametrize("cls", CLASSES)
def test_every_class_has_no_findings(cls):
    """Every class has no findings: each is a way a checker can call a wrong
    pair equal, and a finding is a wrong verdict."""
    for s in range(6):
        r = check_case(make_case(cls, s))
        assert not r.findings, "\n".join(map(str, r.findings))


def test_the_false_proof_oracle_can_fail(monkeypatch):
    """A prover that proves everything is caught on the .func and alignment classes."""
    import ptxopt.equivalence.prove as prove_pkg
    from ptxopt.equivalence.prove import ProveResult

    monkeypatch.setattr(prove_pkg, "prove", lambda a, b, **kw: ProveResult("proved", "stub"))
    for cls in ("func_exit", "misaligned"):
        found = [s for s in range(4) if check_case(make_case(cls, s)).findings]
        assert found, cls


def test_the_hint_oracle_can_fail():
    """A prefetch placed above its address's definition is a finding."""
    from ptxopt import parse

    c = make_case("hint_before_def", 0)
    m = parse(c.original)
    fn = m.entries[0]
    items = fn.body.items
    k = next(i for i, s in enumerate(items) if getattr(s, "opcode", None) == "ld"
             and "%rd5" in str(s.operands))
    from ptxopt.ptx.ir import Addr, Instruction, Reg

    items.insert(5, Instruction("prefetch", ("global", "L2"), (Addr(Reg("%rd5")),)))
    assert k > 5
    from ptxopt.equivalence.prove.hints import hints_only_legal

    assert hints_only_legal(parse(c.original), m)


@pytest.mark.slow
@pytest.mark.parametrize("cls", CLASSES)
def test_fixed_classes_campaign(cls):
    bad = [str(f) for s in range(6, 40) for f in check_case(make_case(cls, s)).findings]
    assert not bad, "\n".join(bad)


def test_every_class_is_named_in_the_module_doc():
    for cls in CLASSES:
        assert f"``{cls}``" in trust_fuzz.__doc__


def test_the_untrusted_oracle_can_fail(monkeypatch):
    """A prover that proves everything is caught on the read-only and precision
    classes, and so is an interpreter check that calls everything equal (the
    pairs differ on a GPU by construction)."""
    import ptxopt.equivalence.interpret as interpret
    import ptxopt.equivalence.prove as prove_pkg
    from ptxopt.equivalence.prove import ProveResult

    monkeypatch.setattr(prove_pkg, "prove", lambda a, b, **kw: ProveResult("proved", "stub"))
    monkeypatch.setattr(interpret, "verify", lambda *a, **kw: interpret.VerifyResult("k", "equal", 1))
    for cls in ("read_only_load", "precision"):
        r = check_case(make_case(cls, 0))
        assert {f.what for f in r.findings} == {"false proof", "false equal"}, cls


def test_the_generators_reach_every_form():
    """Every read-only load form and every precision form is drawn by some seed."""
    ro, prec = set(), set()
    for s in range(300):
        ro.add(make_case("read_only_load", s).what.split(" -> ")[1].split(" after")[0].rsplit(".", 1)[0])
        prec.add(make_case("precision", s).what.split(" -> ")[1])
    assert {f.split(".v")[0] for f in ro} == set(trust_fuzz.READ_ONLY_FORMS)
    assert {p.split(".")[0] for p in prec} == set(trust_fuzz.PRECISION_FORMS)
    drawn = {p.split(".", 1)[1] if "." in p else "" for p in prec}
    assert any("approx" in d for d in drawn) and any("ftz" in d for d in drawn) and any("sat" in d for d in drawn)
