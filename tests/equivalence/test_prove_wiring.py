"""``proved`` wired into the tools: ``ptxopt verify --prove``, the evaluator
(:func:`ptxopt.equivalence.decision.decide` tries the prover first),
:func:`ptxopt.optimize`, and the search/RL notion of a checked result."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from ptxopt.cli import cli
from ptxopt.kernels.corpus import get
from ptxopt.ptx.emit import emit
from ptxopt.ptx.parser import parse
from ptxopt.passes.pipeline import make_pass
from ptxopt.testing.mutants import mutants

KERNEL = "gemm_tile_4x4x4"


def _candidate(pass_name: str) -> tuple[str, str]:
    text = get(KERNEL).ptx_text()
    m = parse(text)
    out, rep = make_pass(pass_name).apply(m)
    assert rep.changed_any
    return emit(m), emit(out)


def _mutant() -> str:
    m = parse(get(KERNEL).ptx_text())
    mu = [x for x in mutants(m, KERNEL, per_operator=1, operators=("constant",))]
    assert mu
    return emit(mu[0].module)


def test_vocabulary_has_proved_and_it_is_trusted():
    from ptxopt.api import ACCEPTED
    from ptxopt.evaluate import TRUSTED, VERDICTS
    from ptxopt.evaluate.result import EvalResult

    assert VERDICTS == ("identical", "hints-only", "proved", "equal", "inconclusive", "differ")
    assert "proved" in TRUSTED and "proved" in ACCEPTED
    assert "inconclusive" not in TRUSTED
    r = EvalResult(kernel="x", pipeline="vec_ld", status="ok", backend="sim", arch="sm_89", estimate=True,
                   cycles=90.0, equivalence="proved", error=None)
    assert r.checked
    # a search (and the RL environment's GRPO rewards, which ask the same Meter) accept it as checked
    from ptxopt.search.meter import EvalOptions, Meter

    assert Meter(EvalOptions()).usable(r)


def test_verify_prove_cli(tmp_path):
    orig, cand = _candidate("vec_ld")
    po, pc, pm = tmp_path / "o.ptx", tmp_path / "c.ptx", tmp_path / "m.ptx"
    po.write_text(orig)
    pc.write_text(cand)
    pm.write_text(_mutant())
    r = CliRunner().invoke(cli, ["verify", str(po), str(pc), "--prove", "--json", "--manifest-entry", KERNEL],
                           catch_exceptions=False)
    assert r.exit_code == 0, r.output
    d = json.loads(r.output)
    assert d["status"] == "proved" and d["prove"]["verdict"] == "proved" and d["prove"]["seconds"] >= 0
    r = CliRunner().invoke(cli, ["verify", str(po), str(pc), "--prove", "--manifest-entry", KERNEL],
                           catch_exceptions=False)
    assert r.exit_code == 0 and "PROVED" in r.output
    # a mutant: never proved; the interpreter's verdict (a mismatch) and exit code stand
    r = CliRunner().invoke(cli, ["verify", str(po), str(pm), "--prove", "--json", "--manifest-entry", KERNEL],
                           catch_exceptions=False)
    d = json.loads(r.output)
    assert d["prove"]["verdict"] != "proved" and d["prove"]["reason"]
    assert d["status"] == "mismatch" and r.exit_code == 1
    # without --prove nothing changes: no "prove" key
    r = CliRunner().invoke(cli, ["verify", str(po), str(pc), "--json", "--manifest-entry", KERNEL],
                           catch_exceptions=False)
    assert "prove" not in json.loads(r.output) and json.loads(r.output)["status"] == "equal"


def _decide(orig_text: str, cand_text: str, prove: bool):
    from ptxopt.equivalence.decision import Reference, decide
    from ptxopt.equivalence.launch import from_spec

    mo, mc = parse(orig_text), parse(cand_text)
    return decide(Reference(mo, key=f"test-prove/{hash(orig_text)}"), mc, KERNEL, from_spec(get(KERNEL)),
                  prove=prove, trials=2)


def test_decide_tries_the_prover_first():
    orig, cand = _candidate("reorder_cp")
    d = _decide(orig, cand, prove=True)
    assert d.verdict == "proved" and "interpreter not run" in d.note and d.finish is None
    d = _decide(orig, cand, prove=False)
    assert d.verdict == "equal" and "prover" not in (d.note or "")
    # not proved: the interpreter decides, the prover's reason is in the note
    d = _decide(orig, _mutant(), prove=True)
    assert d.verdict == "differ" and d.finish == "mismatch" and "prover inconclusive" in d.note


def test_optimize_reports_proved():
    from ptxopt.api import optimize

    text = get(KERNEL).ptx_text()
    r = optimize(text, "vec_ld", if_slower="apply")  # alone, vec_ld is estimated slower on this tile
    assert r.verdict == "proved" and r.changed and r.ptx != text
    r2 = optimize(text, "vec_ld", prove=False, if_slower="apply")
    assert r2.verdict == "equal" and r2.ptx == r.ptx


@pytest.mark.slow
def test_evaluator_proved_skips_the_interpreter(tmp_path):
    from ptxopt.evaluate import evaluate

    r = evaluate(f"corpus:{KERNEL}", "vec_ld", cache=None)
    assert r.ok and r.equivalence == "proved" and r.checked, r.error
    assert "translation validation" in r.equivalence_note
    r2 = evaluate(f"corpus:{KERNEL}", "vec_ld", cache=None, prove=False)
    assert r2.ok and r2.equivalence == "equal" and r2.key != r.key
