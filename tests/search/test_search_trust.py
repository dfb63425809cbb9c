"""Trust on any kernel: search and the library never return what
was not checked.

* one verdict vocabulary (identical, hints-only, equal, inconclusive, differ)
  in results, JSON and the cache;
* a candidate whose equivalence was not established is never kept or
  reported as best by any strategy (nor rewarded by the RL environment)
  unless ``allow_unchecked`` / ``--allow-unchecked``; it is counted and its
  reason is in the per-kernel note;
* the architecture defaults to the module's ``.target``; an original that
  ptxas rejects is bad input, not a pass's failure;
* a truncated sim estimate is a ``truncated`` failure, never ``ok``.

The real-kernel cases use the smallest gemm tile renamed and given an extra
``.u8`` parameter: no manifest entry matches it and the default one-thread
launch has no value for a ``.u8``, so the *original* cannot be interpreted,
while ``vec_ld``/``vec_st`` still lower its estimated cycles.
"""

from __future__ import annotations

import json
import sqlite3

import pytest
from click.testing import CliRunner

import ptxopt.search.meter as measure_mod
from ptxopt.cli import cli as main
from ptxopt.kernels.corpus import get
from ptxopt.evaluate import Candidate, EvalCache, EvalResult, SimBackend, evaluate
from ptxopt.equivalence.launch import Launch
from ptxopt.evaluate.cache import SCHEMA_VERSION
from ptxopt.evaluate.candidate import Settings, settings_for
from ptxopt.search import EvalOptions, Meter, SearchConfig, State, search_kernel

SMALL = "gemm_tile_2x2x4"


def _untrusted() -> str:
    t = get(SMALL).ptx_text().replace(SMALL, "untrusted_tile")
    return t.replace(".param .u64 .ptr .global .align 16 untrusted_tile_param_2\n",
                     ".param .u64 .ptr .global .align 16 untrusted_tile_param_2,\n\t.param .u8 untrusted_tile_flag\n")


def _hopper() -> str:
    """The same tile written for sm_90a: ptxas rejects it for sm_89."""
    return get(SMALL).ptx_text().replace(SMALL, "hopper_tile").replace(".target sm_89", ".target sm_90a")


UNTRUSTED = _untrusted()
HOPPER = _hopper()


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("trust") / "eval.sqlite"


@pytest.fixture(scope="module")
def untrusted() -> Candidate:
    return Candidate(UNTRUSTED, name="untrusted.ptx")


# ---------------------------------------------------------------------------
# the verdict vocabulary


def test_uninterpretable_original_is_inconclusive_not_trusted(cache):
    r = evaluate(UNTRUSTED, "vec_ld", cache=cache, prove=False)  # the interpreter alone
    assert r.ok and r.changed and r.equivalence == "inconclusive" and not r.checked
    assert "cannot be interpreted" in r.equivalence_note and "untrusted_tile_flag" in r.equivalence_note
    d = r.to_json()
    assert d["verdict"] == "inconclusive" and d["launch"].startswith("grid 2x1x1, block 32x1x1")
    base = evaluate(UNTRUSTED, "", cache=cache)
    assert base.ok and base.equivalence == "identical" and base.checked


def test_equal_carries_trials_launch_and_coverage(cache):
    r = evaluate(Candidate.from_corpus(SMALL, "vec_ld"), cache=cache, prove=False)
    assert r.ok and r.equivalence == "equal" and r.checked
    assert "launches" in r.equivalence_note and r.launch.endswith(f"(from corpus:{SMALL})")
    d = r.to_json()
    assert d["verdict"] == "equal" and "coverage" in d


def test_failure_before_the_check_is_inconclusive_with_a_reason(cache):
    r = evaluate(UNTRUSTED, "no_such_pass", cache=cache)
    assert r.status == "illegal" and r.equivalence == "inconclusive" and "not checked" in r.equivalence_note


def test_a_cache_of_the_old_schema_is_not_read(tmp_path):
    """Schema 1 stored verdicts like 'not-checked': such a cache starts afresh."""
    path = tmp_path / "old.sqlite"
    db = sqlite3.connect(path)
    # schema 1's layout, reduced to what the check reads: results, pipelines and meta
    db.execute("CREATE TABLE results (key TEXT PRIMARY KEY, result_json TEXT)")
    db.execute("CREATE TABLE pipelines (key TEXT PRIMARY KEY, result_key TEXT, created REAL)")
    db.execute("CREATE TABLE meta (name TEXT PRIMARY KEY, value TEXT NOT NULL)")
    db.execute("INSERT INTO results VALUES ('k', '{\"equivalence\": \"not-checked\"}')")
    db.execute("PRAGMA user_version = 1")
    db.commit()
    db.close()
    assert SCHEMA_VERSION >= 2
    with EvalCache(path) as c:
        assert len(c) == 0 and c.get("k") is None


# ---------------------------------------------------------------------------
# search on a real kernel whose original cannot be interpreted


def test_greedy_never_reports_an_unchecked_best(untrusted, cache):
    r = search_kernel(untrusted, SearchConfig("greedy", options=EvalOptions(cache=cache, prove=False)))
    assert r.error is None
    assert r.verdict in ("identical", "hints-only", "equal")
    assert "vec_" not in r.pipeline and "reorder_cp" not in r.pipeline
    assert r.unchecked > 0 and "cannot be interpreted" in r.note and "never taken" in r.note
    assert all(s.action not in ("vec_ld", "vec_st") for s in r.steps)
    d = r.to_json()
    assert d["verdict"] == r.verdict and d["unchecked"] == r.unchecked and d["arch"] == "sm_89"


def test_greedy_takes_a_proved_candidate(untrusted, cache):
    """The prover needs no launch: the candidate the interpreter cannot check is proved and may win."""
    r = search_kernel(untrusted, SearchConfig("greedy", options=EvalOptions(cache=cache)))
    assert r.error is None and r.verdict in ("identical", "hints-only", "proved", "equal")
    if "vec_" in r.pipeline:
        assert r.verdict == "proved"


def test_greedy_takes_it_when_allowed(untrusted, cache):
    strict = search_kernel(untrusted, SearchConfig("greedy", options=EvalOptions(cache=cache, prove=False)))
    r = search_kernel(untrusted, SearchConfig("greedy", options=EvalOptions(cache=cache, allow_unchecked=True,
                                                                             prove=False)))
    assert r.error is None and "vec_" in r.pipeline
    assert r.verdict == "inconclusive" and r.best_cycles < strict.best_cycles
    assert "allowed" in r.note and r.launch.startswith("grid 2x1x1, block 32x1x1") and "inferred" in r.launch


def test_search_cli_json_and_allow_unchecked(tmp_path, cache):
    f = tmp_path / "untrusted.ptx"
    f.write_text(UNTRUSTED)
    r = CliRunner().invoke(main, ["search", str(f), "--cache", str(cache), "--json", "-", "--no-prove"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    k = d["kernels"][0]
    assert k["verdict"] in ("identical", "hints-only", "equal") and "vec_" not in k["pipeline"]
    assert k["unchecked"] > 0 and "cannot be interpreted" in k["note"]
    assert d["allow_unchecked"] is False and d["summary"]["unchecked"] == k["unchecked"]
    r = CliRunner().invoke(main, ["search", str(f), "--cache", str(cache), "--allow-unchecked", "--json", "-",
                                  "--no-prove"])
    assert r.exit_code == 0, r.output
    k = json.loads(r.stdout)["kernels"][0]
    assert "vec_" in k["pipeline"] and k["verdict"] == "inconclusive"


def test_eval_cli_json_has_the_verdict(tmp_path, cache):
    f = tmp_path / "untrusted.ptx"
    f.write_text(UNTRUSTED)
    r = CliRunner().invoke(main, ["eval", str(f), "-p", "vec_ld", "--cache", str(cache), "--json", "--no-prove"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert d["verdict"] == d["equivalence"] == "inconclusive" and d["launch"]
    # the prover needs no launch: the same candidate is proved for all inputs
    r = CliRunner().invoke(main, ["eval", str(f), "-p", "vec_ld", "--cache", str(cache), "--json"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert d["verdict"] == "proved" and "translation validation" in d["equivalence_note"]


# ---------------------------------------------------------------------------
# every strategy, with a fake evaluator: vec_* would win on cycles but is unchecked


class Fake:
    """vec_* pipelines: ok, inconclusive and much faster; others: equal and a little faster."""

    def __init__(self, base_verdict: str = "identical"):
        self.base_verdict = base_verdict

    def __call__(self, candidates, workers=0, **kw):
        out = []
        for c in candidates:
            unchecked = "vec_" in c.pipeline
            n = len([p for p in c.pipeline.split(",") if p])
            verdict = "inconclusive" if unchecked else ("equal" if c.pipeline else self.base_verdict)
            out.append(EvalResult(kernel=c.label, pipeline=c.pipeline, status="ok", backend="sim", arch="sm_89",
                                  estimate=True, cycles=(50.0 if unchecked else 100.0 - n),
                                  equivalence=verdict, equivalence_note="fake: the original cannot run"
                                  if unchecked else None))
        return out


STRATEGY_CONFIGS = {
    "greedy": dict(max_steps=3),
    "beam": dict(max_steps=2, beam_width=3),
    "random": dict(max_steps=3, budget=40),
    "exhaustive": dict(max_steps=2),
}


@pytest.mark.parametrize("strategy", list(STRATEGY_CONFIGS))
@pytest.mark.parametrize("allow", [False, True])
def test_no_strategy_keeps_an_unchecked_candidate(strategy, allow, monkeypatch, tmp_path):
    monkeypatch.setattr(measure_mod, "evaluate_many", Fake())
    opts = EvalOptions(cache=tmp_path / "c.sqlite", allow_unchecked=allow)
    r = search_kernel(Candidate.from_corpus(SMALL), SearchConfig(strategy, options=opts,
                                                                 **STRATEGY_CONFIGS[strategy]))
    assert r.error is None and r.unchecked > 0 and "fake: the original cannot run" in r.note
    if allow:
        assert "vec_" in r.pipeline and r.best_cycles == 50.0 and r.verdict == "inconclusive"
    else:
        assert "vec_" not in r.pipeline and r.best_cycles < 100.0 and r.verdict == "equal"
        assert all("vec_" not in s.action and "vec_" not in s.pipeline for s in r.steps)


def test_baseline_is_identical_by_definition(monkeypatch, tmp_path):
    monkeypatch.setattr(measure_mod, "evaluate_many", Fake(base_verdict="inconclusive"))
    m = Meter(EvalOptions(cache=tmp_path / "c.sqlite"))
    root = State.root(Candidate.from_corpus(SMALL))
    base = m.measure([root])[0]
    assert base.equivalence == "identical" and m.usable(base) and m.unchecked_total == 0


def test_truncated_candidate_is_never_best(monkeypatch, tmp_path):
    def fake(candidates, workers=0, **kw):
        return [EvalResult(kernel=c.label, pipeline=c.pipeline, status="truncated" if "vec_" in c.pipeline else "ok",
                           backend="sim", arch="sm_89", estimate=True,
                           cycles=None if "vec_" in c.pipeline else 100.0 - len(c.pipeline),
                           equivalence="equal" if c.pipeline else "identical") for c in candidates]

    monkeypatch.setattr(measure_mod, "evaluate_many", fake)
    r = search_kernel(Candidate.from_corpus(SMALL),
                      SearchConfig("greedy", max_steps=2, options=EvalOptions(cache=tmp_path / "c.sqlite")))
    assert r.error is None and "vec_" not in r.pipeline and r.failures.get("truncated", 0) >= 2


# ---------------------------------------------------------------------------
# the RL environment and the policy strategy


def test_env_gives_an_unchecked_candidate_no_reward(monkeypatch, tmp_path):
    from ptxopt_rl.env import ACTIONS, PipelineEnv

    monkeypatch.setattr(measure_mod, "evaluate_many", Fake())
    for allow in (False, True):
        env = PipelineEnv([SMALL], options=EvalOptions(cache=tmp_path / "c.sqlite", allow_unchecked=allow))
        env.reset(options={"kernel": SMALL})
        _, rew, _, _, info = env.step(ACTIONS.index("vec_ld"))
        if allow:
            assert rew > 0 and "failed" not in info and env.pipeline() == "vec_ld"
        else:
            assert rew == 0.0 and info["failed"] == "unchecked: inconclusive" and env.pipeline() == ""
            assert not env.action_mask()[ACTIONS.index("vec_ld")]


def test_policy_search_never_reports_an_unchecked_best(monkeypatch, tmp_path):
    pytest.importorskip("torch")
    from pathlib import Path

    ckpt = Path(__file__).resolve().parents[2] / "corpus" / "policies" / "gemm_elementwise_sm_89.pt"
    if not ckpt.exists():
        pytest.skip("no committed policy")
    monkeypatch.setattr(measure_mod, "evaluate_many", Fake())
    for allow in (False, True):
        opts = EvalOptions(cache=tmp_path / "c.sqlite", allow_unchecked=allow)
        r = search_kernel(Candidate.from_corpus(SMALL),
                          SearchConfig("policy", policy=str(ckpt), samples=8, options=opts))
        assert r.error is None
        if not allow:
            assert "vec_" not in r.pipeline and r.verdict in ("identical", "equal")
        else:
            assert r.verdict in ("identical", "equal", "inconclusive")


# ---------------------------------------------------------------------------
# the architecture comes from .target


def test_settings_resolve_the_arch_per_kernel():
    assert settings_for(Candidate(HOPPER), Settings()).arch == "sm_90a"
    assert settings_for(Candidate(HOPPER), Settings(arch="sm_90")).arch == "sm_90"
    assert settings_for(Candidate(get(SMALL).ptx_text()), Settings()).arch == "sm_89"


def test_eval_of_an_sm_90a_kernel_uses_its_target(cache):
    r = evaluate(HOPPER, "vec_ld", cache=cache)
    assert r.ok and r.arch == "sm_90a" and r.checked and r.equivalence in ("proved", "equal"), r.error
    explicit = evaluate(HOPPER, "vec_ld", cache=cache, arch="sm_90a")
    assert explicit.key == r.key and explicit.cache_hit  # keys use the resolved arch
    assert evaluate(HOPPER, "vec_ld", cache=cache, arch="sm_90").key != r.key


def test_an_original_ptxas_rejects_is_bad_input(tmp_path, cache):
    r = evaluate(HOPPER, "vec_ld", cache=cache, arch="sm_89")
    assert r.status == "ptxas" and r.bad_input and "rejects the original" in r.error
    f = tmp_path / "hopper.ptx"
    f.write_text(HOPPER)
    out = CliRunner().invoke(main, ["eval", str(f), "-p", "vec_ld", "--cache", str(cache), "--arch", "sm_89"])
    assert out.exit_code == 2 and "rejects the original" in out.output
    out = CliRunner().invoke(main, ["eval", str(f), "-p", "vec_ld", "--cache", str(cache)])
    assert out.exit_code == 0, out.output


def test_search_of_an_sm_90a_kernel(tmp_path, cache):
    r = search_kernel(Candidate(HOPPER, name="hopper.ptx"),
                      SearchConfig("greedy", max_steps=1, options=EvalOptions(cache=cache)))
    assert r.error is None and r.arch == "sm_90a" and r.verdict in ("identical", "hints-only", "proved", "equal")
    assert all(s.arch == "sm_90a" for s in r.steps)
    bad = search_kernel(Candidate(HOPPER, name="hopper.ptx"),
                        SearchConfig("greedy", max_steps=1, options=EvalOptions(cache=cache, arch="sm_89")))
    assert bad.error.startswith("bad input:") and "rejects the original" in bad.error


# ---------------------------------------------------------------------------
# a truncated sim estimate


def test_truncated_sim_estimate_is_a_failure(monkeypatch):
    monkeypatch.setattr(SimBackend, "max_steps", 5)
    r = evaluate(Candidate.from_corpus(SMALL, ""), cache=None)
    assert r.status == "truncated" and not r.ok and r.cycles is None
    assert "stopped after 5 issued instructions" in r.error


def test_sim_result_says_truncated():
    from ptxopt.sim import estimate
    from ptxopt.sim.model import simulate
    from ptxopt.toolchain import compile_ptx, disassemble

    compiled = compile_ptx(get(SMALL).ptx_text(), "sm_89")
    listing = disassemble(compiled.cubin)
    assert simulate(listing, compiled, max_steps=5).truncated
    assert not simulate(listing, compiled).truncated
    assert estimate  # the module's public entry point is still there


# ---------------------------------------------------------------------------
# launch contracts for eval and search (ptxopt.equivalence.launch_contract)


def test_contract_options_make_the_check_possible(tmp_path, cache):
    pytest.importorskip("ptxopt.equivalence.launch_contract")
    f = tmp_path / "untrusted.ptx"
    f.write_text(UNTRUSTED)
    contract = ["--grid", "1", "--block", "1", "--scalar", "untrusted_tile_flag=3"]
    r = CliRunner().invoke(main, ["eval", str(f), "-p", "vec_ld", "--cache", str(cache), "--json", "--no-prove",
                                  *contract])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["verdict"] == "equal"
    r = CliRunner().invoke(main, ["search", str(f), "--cache", str(cache), "--json", "-", "--no-prove", *contract])
    assert r.exit_code == 0, r.output
    k = json.loads(r.stdout)["kernels"][0]
    assert "vec_" in k["pipeline"] and k["verdict"] == "equal" and k["unchecked"] == 0


def test_contract_file_next_to_the_kernel_is_used(tmp_path, cache):
    pytest.importorskip("ptxopt.equivalence.launch_contract")
    f = tmp_path / "untrusted.ptx"
    f.write_text(UNTRUSTED)
    (tmp_path / "untrusted.contract.json").write_text(json.dumps(
        {"launch": {"grid": [1, 1, 1], "block": [1, 1, 1]},
         "params": [{"name": "untrusted_tile_flag", "role": "scalar", "value": 1}]}))
    r = CliRunner().invoke(main, ["search", str(f), "--cache", str(cache), "--json", "-", "--no-prove"])
    assert r.exit_code == 0, r.output
    k = json.loads(r.stdout)["kernels"][0]
    assert "vec_" in k["pipeline"] and k["verdict"] == "equal"


def test_bad_contract_options_are_bad_input(tmp_path, cache):
    pytest.importorskip("ptxopt.equivalence.launch_contract")
    f = tmp_path / "untrusted.ptx"
    f.write_text(UNTRUSTED)
    r = CliRunner().invoke(main, ["eval", str(f), "--cache", str(cache), "--grid", "1"])
    assert r.exit_code == 2 and "--block" in r.output
    r = CliRunner().invoke(main, ["eval", f"corpus:{SMALL}", "--cache", str(cache), "--grid", "1", "--block", "1"])
    assert r.exit_code == 2 and "corpus kernel" in r.output
    r = CliRunner().invoke(main, ["search", str(f), "--cache", str(cache), "--grid", "1", "--block", "1",
                                  "--scalar", "nope=1"])
    assert r.exit_code == 2 and "nope" in r.output


# ---------------------------------------------------------------------------
# coverage: an "equal" that exercised too little is inconclusive

SPARSE = """.version 8.0
.target sm_89
.address_size 64

.visible .entry sparse(.param .u64 p)
{
	.reg .b64 %rd<3>;
	.reg .b32 %r<2>;
	mov.u32 %r1, 7;
	ld.param.u64 %rd1, [p];
	cvta.to.global.u64 %rd2, %rd1;
	st.global.u32 [%rd2], %r1;
	st.global.u32 [%rd2+4096], %r1;
	ret;
}
"""


def test_low_coverage_is_inconclusive(cache):
    r = evaluate(SPARSE, "reorder_lf", cache=cache, prove=False)  # 8 of the 4100 bytes up to the last store
    assert r.ok and r.changed and r.equivalence == "inconclusive" and not r.checked, r
    assert r.coverage is not None and r.coverage < 0.5 and "stored only" in r.equivalence_note
    loose = evaluate(SPARSE, "reorder_lf", cache=cache, min_coverage=None, prove=False)
    assert loose.ok and loose.equivalence == "inconclusive" and "inferred launch" in loose.equivalence_note
    given = Candidate(SPARSE, "reorder_lf", launch=Launch(origin="options", source="options"))
    loose = evaluate(given, cache=cache, min_coverage=None, prove=False)
    assert loose.ok and loose.equivalence == "equal" and loose.key != r.key
