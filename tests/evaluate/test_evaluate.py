"""The evaluator (ptxopt.evaluate): result fields, cache, failure categories,
parallel evaluation, loops, the gpu hook and the eval command."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import time
from dataclasses import replace

import pytest
from click.testing import CliRunner

import ptxopt.toolchain
from ptxopt.evaluate import (FAILURES, BackendUnavailable, Candidate, EvalCache, EvalResult, evaluate,
                             evaluate_many, get_backend)
from ptxopt.measure import gpu as gpu_backend_mod
from ptxopt.measure import backend_registry as registry_mod
from ptxopt.ptx.ir import Addr, instruction_slots
from ptxopt.passes.base import ChangeReport, IllegalPass
from ptxopt.passes.registry import get_pass_class

SMALL = "gemm_tile_2x2x2"
MID = "gemm_tile_4x4x4"


@pytest.fixture
def cache(tmp_path):
    return tmp_path / "eval.sqlite"


@pytest.fixture
def ptxas_calls(monkeypatch):
    calls = []
    real = ptxopt.toolchain.compile_ptx

    def counting(*a, **kw):
        calls.append(a[0])
        return real(*a, **kw)

    monkeypatch.setattr(ptxopt.toolchain, "compile_ptx", counting)
    return calls


def same(a: EvalResult, b: EvalResult) -> bool:
    """Equal apart from the cache flag."""
    return replace(a, cache_hit=False) == replace(b, cache_hit=False)


# ---------------------------------------------------------------------------
# results and the cache


def test_result_fields_for_a_corpus_kernel(cache):
    r = evaluate(Candidate.from_corpus(MID, "vec_ld"), cache=cache)
    assert r.status == "ok" and r.ok and r.error is None
    assert r.kernel == MID and r.entry == MID and r.pipeline == "vec_ld"
    assert r.backend == "sim" and r.estimate is True and r.cycles_kind == "ESTIMATE"
    assert r.cycles > 0 and r.registers > 0 and r.spill_bytes == 0 and r.sass_instructions > 0
    assert r.equivalence in ("proved", "equal") and r.checked and r.changed is True
    assert r.arch == "sm_89" and r.ptxas_version
    assert set(r.timings) >= {"pass", "ptxas", "verify", "backend", "total"}
    assert r.cache_hit is False and len(r.key) == 64
    assert r.trip_counts.startswith("none needed")  # gemm_tile is fully unrolled
    doc = r.to_json()
    assert doc["spill_bytes"] == 0 and doc["cycles_kind"] == "ESTIMATE"
    assert EvalResult.from_json(json.loads(json.dumps(doc))) == r


def test_second_call_is_a_cache_hit_without_ptxas(cache, ptxas_calls):
    c = Candidate.from_corpus(SMALL, "reorder_cp")
    first = evaluate(c, cache=cache)
    assert first.ok and len(ptxas_calls) == 1
    second = evaluate(c, cache=cache)
    assert second.cache_hit is True and same(first, second)
    assert len(ptxas_calls) == 1  # nothing recompiled


def test_unchanged_module_hits_the_cache_by_key(cache, ptxas_calls):
    base = evaluate(Candidate.from_corpus(MID, ""), cache=cache)
    assert base.ok and base.changed is False and base.equivalence == "identical"
    n = len(ptxas_calls)
    # split_ld expands vector loads; gemm_tile's loads are scalar, so it changes nothing
    noop = evaluate(Candidate.from_corpus(MID, "split_ld"), cache=cache)
    assert noop.changed is False and noop.cache_hit is True
    assert noop.key == base.key and noop.cycles == base.cycles and noop.pipeline == "split_ld"
    assert len(ptxas_calls) == n


def test_cache_schema_is_documented_and_wal(cache):
    evaluate(Candidate.from_corpus(SMALL, ""), cache=cache)
    db = sqlite3.connect(cache)
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    cols = {r[1] for r in db.execute("PRAGMA table_info(results)")}
    assert {"key", "status", "cycles", "estimate", "registers", "spill_bytes", "sass_instructions",
            "result_json"} <= cols
    from ptxopt.evaluate import SCHEMA

    assert "CREATE TABLE IF NOT EXISTS results" in SCHEMA and "pipelines" in SCHEMA


# ---------------------------------------------------------------------------
# failure categories (results, cached)


def _patch_pass(monkeypatch, name, mutate):
    """Make pass ``name`` rewrite the first instruction ``mutate`` accepts."""
    cls = get_pass_class(name)

    def run(self, module):
        report = ChangeReport(self.name)
        for fn in module.functions:
            if fn.body is None:
                continue
            for items, i, ins in instruction_slots(fn.body):
                new = mutate(ins)
                if new is not None:
                    items[i] = new
                    report.change(fn.name, ins.line, "patched for a test")
                    return report
        return report

    monkeypatch.setattr(cls, "run", run)


def _check_failure(cache, pipeline, category, kernel=SMALL):
    r = evaluate(Candidate.from_corpus(kernel, pipeline), cache=cache)
    assert r.status == category, r
    assert r.status in FAILURES and r.cycles is None and r.error
    again = evaluate(Candidate.from_corpus(kernel, pipeline), cache=cache)
    assert again.cache_hit is True and same(r, again)  # failures are cached too
    return r


def test_the_candidate_parses_its_pipeline_once(cache, monkeypatch):
    """A Candidate holds the canonical pipeline; evaluating it (and looking it up) parses nothing."""
    from ptxopt.passes.pipeline import Pipeline

    c = Candidate.from_corpus(SMALL, " vec_ld , maxnreg_128{override=0} ")
    assert c.pipeline == "vec_ld,maxnreg_128" and c.parsed == Pipeline.parse("vec_ld,maxnreg_128")
    assert c.pipeline_error is None and replace(c, name="copy").parsed == c.parsed
    given = Pipeline.parse("cache_cg")
    assert Candidate.from_corpus(SMALL, given).parsed is given  # a Pipeline is taken as it is

    def parse_again(*a, **kw):
        raise AssertionError("the pipeline was parsed again after the candidate was built")

    monkeypatch.setattr(Pipeline, "parse", classmethod(parse_again))
    r = evaluate(c, cache=cache)
    assert r.ok and r.pipeline == "vec_ld,maxnreg_128"
    assert evaluate(c, cache=cache).cache_hit  # found by its pipeline key alone


def test_a_bad_pipeline_is_found_when_the_candidate_is_built(cache):
    from ptxopt.passes.pipeline import Pipeline, PipelineError

    with pytest.raises(PipelineError) as parse_error:
        Pipeline.parse("vec_ld,frobnicate")
    c = Candidate.from_corpus(SMALL, " vec_ld,frobnicate ")
    assert c.parsed is None and c.pipeline == "vec_ld,frobnicate"
    assert str(c.pipeline_error) == str(parse_error.value)
    r = evaluate(c, cache=cache)
    assert r.status == "illegal" and r.error == str(parse_error.value) and r.pipeline == "vec_ld,frobnicate"
    built = Pipeline.parse("maxnreg_32") + Pipeline.parse("maxnreg_64")  # `+` does not check conflicts
    c = Candidate.from_corpus(SMALL, built)
    assert c.parsed is None and "conflicting passes" in str(c.pipeline_error)
    assert evaluate(c, cache=cache).status == "illegal"


def test_conflicting_pipeline_is_illegal(cache):
    r = _check_failure(cache, "maxnreg_32,maxnreg_64", "illegal")
    assert "conflicting" in r.error


def test_pass_refusing_the_module_is_illegal(cache, monkeypatch):
    def refuse(self, module):
        raise IllegalPass("not for this kernel (test)")

    monkeypatch.setattr(get_pass_class("cache_cg"), "check_legal", refuse)
    r = _check_failure(cache, "cache_cg", "illegal")
    assert "cache_cg" in r.error and "not for this kernel" in r.error


def test_bad_ptx_from_a_pass_is_a_ptxas_failure(cache, monkeypatch):
    _patch_pass(monkeypatch, "cache_cg",
                lambda ins: replace(ins, opcode="bogus_op") if ins.opcode == "fma" else None)
    r = _check_failure(cache, "cache_cg", "ptxas")
    assert "bogus_op" in r.error or "line" in r.error


def test_miscompiling_pass_is_a_mismatch(cache, monkeypatch):
    # fma d, a, b, c -> fma d, a, b, a: valid PTX, different value
    _patch_pass(monkeypatch, "cache_cg", lambda ins: replace(ins, operands=ins.operands[:3] + ins.operands[1:2])
                if ins.opcode == "fma" else None)
    r = _check_failure(cache, "cache_cg", "mismatch")
    assert r.equivalence == "differ" and "computes something else" in r.error
    assert r.to_json()["verdict"] == "differ" and "elements differ" in r.equivalence_note  # the counterexample
    assert r.registers is not None  # ptxas's figures are still reported


def test_faulting_kernel_is_a_fault(cache, monkeypatch):
    def far(ins):
        if ins.opcode == "ld" and "global" in ins.modifiers:
            a = ins.operands[1]
            return replace(ins, operands=(ins.operands[0], Addr(a.base, a.offset + (1 << 22))))
        return None

    _patch_pass(monkeypatch, "cache_cg", far)
    r = _check_failure(cache, "cache_cg", "fault")
    # it faults where the original runs (the note may add why the prover did not decide)
    assert r.equivalence == "differ" and r.equivalence_note.startswith(r.error)


def test_parse_failure_is_a_result(cache):
    r = evaluate(".version 8.8\n.target sm_89\n.entry k( {\n", "", cache=cache)
    assert r.status == "parse" and r.cycles is None and r.error


def test_timeout_is_a_result(cache, monkeypatch):
    # the limit must run out in the evaluating thread (the passes here): left to timing, the
    # passes and a memoised proof of this kernel can finish inside 10 ms, and then ptxas, which
    # gets the same limit as its own, is killed first -- a tool fault ('toolchain', never cached:
    # test_tool_faults), not this test's subject. So the passes are made to take 50 ms.
    from ptxopt.evaluate import prepare as frontend

    slow = frontend.run_pipeline

    def run_pipeline(*a, **k):
        time.sleep(0.05)
        return slow(*a, **k)

    monkeypatch.setattr(frontend, "run_pipeline", run_pipeline)
    c = Candidate.from_corpus("gemm_tile_8x8x8", "reorder_il")
    c = replace(c, ptx=c.ptx + f"\n// test_timeout_is_a_result {time.time_ns()}\n")
    r = evaluate(c, cache=cache, timeout=0.01)
    assert r.status == "timeout" and "0.01" in r.error, r.error
    # a larger limit does not reuse the cached timeout
    r2 = evaluate(c, cache=cache, timeout=120)
    assert r2.ok and not r2.cache_hit


# ---------------------------------------------------------------------------
# parallel


def _cands():
    return [Candidate.from_corpus(k, p) for k in (SMALL, "gemm_tile_2x4x2", MID)
            for p in ("", "vec_ld", "maxnreg_32")] + [Candidate.from_corpus(SMALL, "maxnreg_32,maxnreg_64")]


def _core(r: EvalResult):
    return (r.kernel, r.pipeline, r.status, r.cycles, r.registers, r.spill_bytes, r.sass_instructions,
            r.equivalence, r.key, r.error)


def test_two_workers_give_the_serial_results(tmp_path):
    serial = evaluate_many(_cands(), workers=0, cache=tmp_path / "a.sqlite")
    par = evaluate_many(_cands(), workers=2, cache=tmp_path / "b.sqlite")
    assert [_core(r) for r in serial] == [_core(r) for r in par]
    assert not any(r.cache_hit for r in par)
    again = evaluate_many(_cands(), workers=2, cache=tmp_path / "b.sqlite")
    assert all(r.cache_hit for r in again) and [_core(r) for r in again] == [_core(r) for r in serial]


def test_worker_crash_fails_only_its_candidate(cache, monkeypatch):
    def crash(self, module):
        os.kill(os.getpid(), signal.SIGKILL)

    monkeypatch.setattr(get_pass_class("prefetch_L1"), "run", crash)
    cands = [Candidate.from_corpus(SMALL, ""), Candidate.from_corpus(SMALL, "prefetch_L1"),
             Candidate.from_corpus("gemm_tile_2x2x4", "")]
    rs = evaluate_many(cands, workers=1, cache=cache)
    assert [r.status for r in rs] == ["ok", "internal", "ok"]
    assert "worker process died (signal 9)" in rs[1].error and not rs[1].cacheable


def test_hung_worker_is_killed_at_the_time_limit(cache, monkeypatch):
    import ptxopt.evaluate.parallel as par

    def hang(self, module):
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})  # defeat the worker's own limit
        time.sleep(60)

    monkeypatch.setattr(get_pass_class("prefetch_L2"), "run", hang)
    monkeypatch.setattr(par, "GRACE", 0.5)
    t = time.perf_counter()
    rs = evaluate_many([Candidate.from_corpus(SMALL, "prefetch_L2"), Candidate.from_corpus(SMALL, "")],
                       workers=1, cache=cache, timeout=1.0)
    assert time.perf_counter() - t < 20
    assert [r.status for r in rs] == ["timeout", "ok"] and "killed" in rs[0].error
    # stored under the key a lookup asks for (the arch resolved for the candidate, not the pool's None)
    again = evaluate_many([Candidate.from_corpus(SMALL, "prefetch_L2")], workers=1, cache=cache, timeout=1.0)
    assert again[0].cache_hit and again[0].status == "timeout"


# ---------------------------------------------------------------------------
# loops, kernels outside the corpus


def test_loop_trip_counts_come_from_the_performance_launch(cache):
    # latency: one warp, whose time follows its loop trips (on the performance launch saxpy is bound by
    # DRAM bandwidth, which no trip count changes); the trips are the performance launch's under either
    # objective, the check launch only checks
    r = evaluate(Candidate.from_corpus("cuda_saxpy", ""), cache=cache, objective="latency")
    assert r.ok and r.trip_counts == "performance launch"
    assert any("loop trips at the performance launch" in n for n in r.notes)
    static = evaluate(Candidate.from_corpus("cuda_saxpy", ""), cache=cache, profile_loops=False,
                      objective="latency")
    assert static.trip_counts.startswith("static") and static.cycles != r.cycles


def test_kernel_outside_the_corpus_gets_an_inferred_launch_and_a_guess_never_says_equal(cache):
    from ptxopt.kernels.corpus import get
    from ptxopt.equivalence.launch import Launch, guessed

    text = get(SMALL).ptx_text().replace(SMALL, "my_kernel")  # no manifest entry matches
    r = evaluate(text, "vec_ld", cache=cache, prove=False)  # the interpreter on a launch inferred from the PTX
    assert r.ok and r.equivalence == "equal" and r.checked and "inferred from the PTX of my_kernel" in r.launch
    r = evaluate(Candidate(text, "vec_ld", launch=guessed()), cache=cache, prove=False)
    assert r.ok and r.equivalence == "inconclusive" and not r.checked
    assert "guessed launch" in r.equivalence_note and "block 1x1x1" in r.launch
    given = Launch(origin="options", source="options")  # the same one thread, but given by the user
    r = evaluate(Candidate(text, "vec_ld", launch=given), cache=cache, prove=False)
    assert r.ok and r.equivalence == "equal" and "block (1, 1, 1)" in r.equivalence_note
    assert evaluate(text, "vec_ld", cache=cache).equivalence == "proved"  # the prover needs no launch


ODD = """.version 8.0
.target sm_89
.address_size 64

.visible .entry odd(.param .u64 p, .param .u8 h)
{
	.reg .b64 %rd<3>;
	.reg .b32 %r<2>;
	mov.u32 %r1, 7;
	ld.param.u64 %rd1, [p];
	cvta.to.global.u64 %rd2, %rd1;
	st.global.u32 [%rd2], %r1;
	ret;
}
"""


def test_original_that_cannot_run_is_not_checked(cache):
    # the default one-thread launch has no value for a .u8 parameter
    r = evaluate(ODD, "reorder_lf", cache=cache, prove=False)  # hoists the ld.param: code changed, a run is needed
    assert r.ok and r.changed and r.equivalence == "inconclusive" and not r.checked
    assert "cannot be interpreted" in r.equivalence_note and "h" in r.equivalence_note
    # a change of hints alone needs no run, so nothing is left unchecked
    r = evaluate(ODD, "maxnreg_64", cache=cache)
    assert r.ok and r.changed and r.equivalence == "hints-only"


# ---------------------------------------------------------------------------
# the gpu hook


def _without_module(monkeypatch, missing: str) -> None:
    """Make the backend registry see ``missing`` as not installed (and forget built backends)."""
    real = gpu_backend_mod.importlib.util.find_spec
    monkeypatch.setattr(gpu_backend_mod.importlib.util, "find_spec",
                        lambda name, *a: None if name == missing else real(name, *a))
    monkeypatch.setattr(registry_mod, "_INSTANCES", {})


def test_gpu_backend_unavailable_is_a_clean_error(monkeypatch):
    _without_module(monkeypatch, "cupy")
    with pytest.raises(BackendUnavailable, match="^GPU backend unavailable: CuPy is not installed"):
        get_backend("gpu")
    with pytest.raises(BackendUnavailable, match="GPU backend unavailable"):
        evaluate(Candidate.from_corpus(SMALL, ""), backend="gpu", cache=None)
    from ptxopt.cli.eval import eval_cmd

    res = CliRunner().invoke(eval_cmd, [f"corpus:{SMALL}", "--backend", "gpu", "--no-cache"])
    assert res.exit_code == 2 and "GPU backend unavailable" in res.output


def test_gpu_package_missing(monkeypatch):
    _without_module(monkeypatch, "ptxopt.gpu")
    with pytest.raises(BackendUnavailable, match="^GPU backend unavailable: the ptxopt.gpu package"):
        get_backend("gpu")


# ---------------------------------------------------------------------------
# the command


def _run(args):
    from ptxopt.cli.eval import eval_cmd

    return CliRunner().invoke(eval_cmd, args)


def test_cli_single_kernel(cache):
    res = _run([f"corpus:{MID}", "--passes", "vec_ld", "--cache", str(cache)])
    assert res.exit_code == 0, res.output
    assert "ESTIMATE" in res.output and "registers" in res.output and "SASS instrs" in res.output
    res = _run([f"corpus:{MID}", "--passes", "vec_ld", "--cache", str(cache), "--json"])
    doc = json.loads(res.output)
    assert doc["cache_hit"] is True and doc["estimate"] is True and doc["cycles"] > 0


def test_cli_failure_and_bad_input(cache, monkeypatch, tmp_path):
    _patch_pass(monkeypatch, "cache_cg",
                lambda ins: replace(ins, opcode="bogus_op") if ins.opcode == "fma" else None)
    res = _run([f"corpus:{SMALL}", "--passes", "cache_cg", "--cache", str(cache)])
    assert res.exit_code == 1 and "ptxas" in res.output
    assert _run([f"corpus:{SMALL}", "--passes", "maxnreg_32,maxnreg_64", "--no-cache"]).exit_code == 2
    assert _run([f"corpus:{SMALL}", "--passes", "no_such_pass", "--no-cache"]).exit_code == 2
    assert _run([str(tmp_path / "missing.ptx"), "--no-cache"]).exit_code == 2
    bad = tmp_path / "bad.ptx"
    bad.write_text(".version 8.8\n.target sm_89\n.entry k( {\n")
    res = _run([str(bad), "--no-cache"])
    assert res.exit_code == 2 and "bad.ptx:" in res.output
    assert _run([f"corpus:{SMALL}", "--kernel", "nope", "--no-cache"]).exit_code == 2


def test_cli_several_kernels_with_workers(cache):
    res = _run(["corpus:gemm_tile_2x2x2,gemm_tile_2x2x4,gemm_tile_2x4x2", "--workers", "2",
                "--cache", str(cache)])
    assert res.exit_code == 0, res.output
    assert "3 candidates: 3 ok" in res.output and "ESTIMATES" in res.output
    res = _run(["corpus:gemm_tile_2x2x2,gemm_tile_2x2x4,gemm_tile_2x4x2", "-p", "", "-p", "vec_ld",
                "--workers", "2", "--cache", str(cache), "--json"])
    doc = json.loads(res.output)
    assert len(doc["results"]) == 6 and doc["summary"]["cache_hits"] == 3 and doc["cycles_kind"] == "ESTIMATE"


def test_cache_survives_reopen(cache):
    r = evaluate(Candidate.from_corpus(SMALL, "vec_st"), cache=cache)
    with EvalCache(cache) as c:
        assert c.get(r.key) == r and len(c) >= 1


# ---------------------------------------------------------------------------
# the memoised equivalence check agrees with ptxopt.equivalence.interpret


def _mutated(kernel, mutate):
    from ptxopt.kernels.corpus import get
    from ptxopt.ptx.parser import parse

    m = parse(get(kernel).ptx_text())
    out = m.copy()
    for fn in out.functions:
        for items, i, ins in instruction_slots(fn.body):
            new = mutate(ins)
            if new is not None:
                items[i] = new
                return m, out
    return m, out


@pytest.mark.parametrize("kernel,mutate", [
    ("gemm_tile_2x4x2", lambda ins: None),  # equal
    ("gemm_tile_2x4x2", lambda ins: replace(ins, operands=ins.operands[:3] + ins.operands[1:2])
     if ins.opcode == "fma" else None),  # mismatch
    ("gemm_tile_2x4x2", lambda ins: replace(ins, operands=(ins.operands[0], Addr(ins.operands[1].base, 1 << 22)))
     if ins.opcode == "ld" and "global" in ins.modifiers else None),  # fault
    ("cuda_reduce_sum_smem", lambda ins: None),  # many threads, barriers
])
def test_memoised_verify_agrees_with_verify(kernel, mutate):
    from ptxopt.kernels.corpus import get
    from ptxopt.equivalence.decision import _RUNS, clear
    from ptxopt.interp import Program
    from ptxopt.equivalence.interpret import verify

    spec = get(kernel)
    orig, new = _mutated(kernel, mutate)
    expect = verify(Program(orig), Program(new), spec.entry, trials=4, spec=spec)
    clear()
    for _ in range(2):  # computing the reference, then reusing it (decide()'s memo of the originals' runs)
        got = verify(Program(orig), Program(new), spec.entry, trials=4, spec=spec, reference=_RUNS.get(),
                     reference_key="ref")
        assert got.to_json() == expect.to_json()


def test_a_worker_that_dies_once_costs_no_candidate(cache, monkeypatch, tmp_path):
    """A death that does not repeat (the OOM killer, a stray SIGKILL): the candidate is retried in a fresh worker."""
    once = tmp_path / "died-once"

    def crash_once(self, module):
        if not once.exists():
            once.touch()
            os.kill(os.getpid(), signal.SIGKILL)
        return ChangeReport(self.name, [])

    monkeypatch.setattr(get_pass_class("prefetch_L1"), "run", crash_once)
    cands = [Candidate.from_corpus(SMALL, ""), Candidate.from_corpus(SMALL, "prefetch_L1"),
             Candidate.from_corpus("gemm_tile_2x2x4", "")]
    rs = evaluate_many(cands, workers=1, cache=cache)
    assert once.exists() and [r.status for r in rs] == ["ok", "ok", "ok"], [r.error for r in rs]
