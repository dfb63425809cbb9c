"""The rules of :mod:`ptxopt.evaluate.stages`, as the three callers that take them from there show them.

Each tempting input goes through :func:`ptxopt.optimize`, the evaluator
(:func:`ptxopt.evaluate.evaluate`) and ``ptxopt run``, and each caller's own
observable output is checked: a rewrite ptxas rejects, an input ptxas
rejects, a structural rewrite whose proof fails, a pass that crashes and a
pass that runs out of time. The callers word and schedule things their own
way; what an outcome means must agree.
"""

from __future__ import annotations

import time
from types import SimpleNamespace

import pytest

from broken_rewrite import STORE_ONE, append_bad_load, patch_maxnreg, with_bad_load
from cli_helpers import run_cli

import ptxopt
from ptxopt.evaluate import evaluate
from ptxopt.evaluate import stages
from ptxopt.kernels.corpus import load_manifest
from ptxopt.passes.passmanager import InputRejected
from ptxopt.toolchain import PtxasError, ToolCrashed, UnsupportedArch

KERNEL = STORE_ONE


def _cli(tmp_path, text, *args):
    ptx = tmp_path / "k.ptx"
    ptx.write_text(text)
    out = tmp_path / "out.ptx"
    return run_cli("run", *args, "-o", out, ptx), out


def test_a_rewrite_ptxas_rejects_is_the_rewrites_fault_everywhere(monkeypatch, tmp_path):
    patch_maxnreg(monkeypatch, append_bad_load)
    res = ptxopt.optimize(KERNEL, "maxnreg_64")
    assert res.ptx is KERNEL and res.verdict == "differ" and res.reason.startswith("ptxas rejects the result")
    ev = evaluate(KERNEL, "maxnreg_64", cache=None)
    assert ev.status == "ptxas" and not ev.bad_input and "rejects the original" not in ev.error, ev.error
    r, out = _cli(tmp_path, KERNEL, "--passes", "maxnreg_64")
    assert r.exit_code == 1 and "ptxas rejects the output" in r.stderr and not out.exists()


def test_an_input_ptxas_rejects_is_the_inputs_problem_everywhere(tmp_path):
    bad = with_bad_load(KERNEL)
    with pytest.raises(InputRejected, match="rejects the input itself"):
        ptxopt.optimize(bad, "maxnreg_64")
    ev = evaluate(bad, "maxnreg_64", cache=None)
    assert ev.status == "ptxas" and ev.bad_input and "bad input, not the pipeline's doing" in ev.error
    assert not ev.cacheable
    r, out = _cli(tmp_path, bad, "--passes", "maxnreg_64")
    assert r.exit_code == 2 and "rejects the input itself" in r.stderr and not out.exists()
    r, _ = _cli(tmp_path, bad, "--verify-each", "--passes", "maxnreg_64")
    assert r.exit_code == 2 and "rejects the input itself for sm_89, before any pass" in r.stderr


def test_a_pass_that_crashes_is_never_the_inputs_problem(monkeypatch, tmp_path):
    def crash(module):
        raise RuntimeError("boom in the test pass")

    patch_maxnreg(monkeypatch, crash)
    res = ptxopt.optimize(KERNEL, "maxnreg_64")
    assert res.ptx is KERNEL and res.verdict == "inconclusive" and res.reason.startswith("a pass failed")
    assert "boom in the test pass" in res.reason
    ev = evaluate(KERNEL, "maxnreg_64", cache=None)
    assert ev.status == "internal" and "a pass crashed" in ev.error and not ev.bad_input
    r, out = _cli(tmp_path, KERNEL, "--passes", "maxnreg_64")
    assert r.exit_code == 1 and "pass failure" in r.stderr and not out.exists()


def test_a_pass_that_runs_out_of_time_keeps_the_input(monkeypatch):
    """``run`` sets no time limit (it has no option for one): only the two callers that do are compared."""
    patch_maxnreg(monkeypatch, lambda module: time.sleep(3))
    res = ptxopt.optimize(KERNEL, "maxnreg_64", timeout=0.5, estimate=False)
    assert res.ptx is KERNEL and res.verdict == "inconclusive" and "took longer than 0.5 s" in res.reason
    ev = evaluate(KERNEL, "maxnreg_64", cache=None, timeout=0.5)
    assert ev.status == "timeout" and "took longer than 0.5 s" in ev.error and ev.equivalence != "equal"


def test_a_structural_rewrite_stands_only_on_a_proof(monkeypatch, tmp_path):
    """unroll_2 on a loop, with every proof failing: ``optimize`` and ``run`` refuse the rewrite though the
    interpreter finds it equal, and the evaluator says ``inconclusive`` with the same reason (its cycles are
    measured, but a search never takes it as its best, nor ``search --emit`` writes it): one rule,
    :func:`stages.refusal`, for all three."""
    import ptxopt.equivalence.prove as prove_pkg

    def no_proof(*a, **k):
        return SimpleNamespace(verdict="inconclusive", reason="no proof in this test", seconds=0.0)

    monkeypatch.setattr(prove_pkg, "prove", no_proof)
    spec = next(k for k in load_manifest() if k.id == "cuda_matmul_naive")
    src = spec.ptx_path.read_text()
    res = ptxopt.optimize(src, "unroll_2", estimate=False)
    assert res.candidate is not None and res.ptx is src and res.verdict != "proved"
    assert "unroll_2 changed control flow and the result was not proved equivalent" in res.reason
    ev = evaluate(src, "unroll_2", cache=None)
    assert ev.status == "ok" and ev.equivalence == "inconclusive" and not ev.checked and ev.cycles
    assert ev.equivalence_note.startswith("unroll_2 changed control flow and the result was not proved equivalent "
                                          "(equal: ")
    r, out = _cli(tmp_path, src, "--passes", "unroll_2")
    assert r.exit_code == 1 and "not proved: " in r.stderr and "nothing written" in r.stderr and not out.exists()
    r, out = _cli(tmp_path, src, "--passes", "unroll_2", "--allow-unchecked")
    assert r.exit_code == 0 and "NOT PROVED" in r.stderr and out.exists()


def _ptxas_error(msg="ptxas: error: bad"):
    from ptxopt.toolchain.errors import Diagnostic

    return PtxasError((Diagnostic("error", 3, msg),), msg, 255)


def test_blame_asks_about_the_input_only_for_a_rejection():
    asked = []

    def input_rejection():
        asked.append(1)
        return "the input's error"

    assert stages.blame(ToolCrashed("ptxas", "killed"), input_rejection) == stages.TRANSIENT
    assert stages.blame(UnsupportedArch("sm_1"), input_rejection) == stages.UNSUPPORTED
    assert asked == []
    assert stages.blame(_ptxas_error(), input_rejection) == stages.BAD_INPUT and asked == [1]
    assert stages.blame(_ptxas_error(), lambda: None) == stages.REJECTED
    assert stages.blame(_ptxas_error(), lambda: None, changed=False) == stages.REPRINT
    assert stages.judge_ptxas(ValueError("not the toolchain's")) == stages.BROKEN
    assert not stages.input_judged(ToolCrashed("ptxas", "killed")) and stages.input_judged(_ptxas_error())


def test_rejection_is_said_only_by_a_ptxas_that_judged_the_text():
    def raising(e):
        def compile_text():
            raise e
        return compile_text

    rejected = _ptxas_error()
    assert stages.rejection(raising(rejected)) is rejected
    assert stages.rejection(lambda: None) is None
    assert stages.rejection(raising(ToolCrashed("ptxas", "killed"))) is None  # says nothing about the text
    with pytest.raises(ValueError):  # not the toolchain's: goes through
        stages.rejection(raising(ValueError("a bug")))


def test_refusal_puts_structural_rewrites_behind_a_proof():
    from ptxopt.equivalence.verdict import Verdict

    assert stages.refusal(Verdict.PROVED, "", ["unroll_2"]) is None
    assert stages.refusal(Verdict.EQUAL, "", []) is None
    for v in (Verdict.EQUAL, Verdict.HINTS_ONLY, Verdict.UNCHECKED):
        assert "not proved equivalent" in stages.refusal(v, "note", ["unroll_2"])
    assert stages.refusal(Verdict.DIFFER, "x was 1", ["unroll_2"]) == "equivalence differ: x was 1"
    assert stages.unproved_proofs([SimpleNamespace(verdict="proved"), SimpleNamespace(verdict="unknown")]) \
        == [SimpleNamespace(verdict="unknown")]


@pytest.mark.slow
def test_no_structural_rewrite_is_trusted_without_a_proof(tmp_path):
    """The class of the gap :func:`test_a_structural_rewrite_stands_only_on_a_proof` closed: every pass
    that declares itself structural (found in the registry, so a new one is covered), applied through
    ``ptxopt eval --no-prove`` (the interpreter decides) to kernels it rewrites, must never come back with
    a trusted verdict: ``equal`` at sampled trip counts is no evidence for every trip count. Each pass
    kind must rewrite at least one kernel here, so the test cannot pass by rewriting nothing."""
    import json
    from pathlib import Path

    from ptxopt.passes import pass_names
    from ptxopt.passes.pipeline import make_pass

    structural = [n for n in pass_names() if make_pass(n).structural]
    assert {make_pass(n).kind for n in structural} >= {"unroll", "loop_version", "swp_ld"}
    rows = Path(__file__).resolve().parents[2] / "benchmarks" / "outside_kernels"
    inputs = ["corpus:cuda_matmul_naive", str(rows / "rows_axpy.ptx")]  # a nvcc loop; a row-per-thread walk
    rewrote, by_rule = set(), set()
    for src in inputs:
        args = [a for n in structural for a in ("-p", n)]
        r = run_cli("eval", src, *args, "--no-prove", "--no-cache", "--json")
        doc = json.loads(r.stdout)
        results = doc["results"] if isinstance(doc, dict) and "results" in doc else doc
        for res in results if isinstance(results, list) else [results]:
            if not res.get("pipeline") or not res.get("changed") or res.get("status") != "ok":
                continue
            rewrote.add(make_pass(res["pipeline"]).kind)
            assert res["verdict"] not in ("equal", "proved", "hints-only", "identical"), (src, res["pipeline"])
            if "changed control flow and the result was not proved equivalent" in (res["equivalence_note"] or ""):
                by_rule.add(make_pass(res["pipeline"]).kind)  # the interpreter said equal; the rule refused it
    assert rewrote >= {"unroll", "loop_version", "swp_ld"}, rewrote
    assert by_rule, "no sampled 'equal' reached the rule: the test would pass on the old code"
