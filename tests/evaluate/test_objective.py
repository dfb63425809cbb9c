"""The objective (latency or throughput) and the performance launch.

One rule for the default objective, the performance launch never confused
with the check launch, both in the cache key, an unknown grid assumed once
from the ORIGINAL kernel's occupancy (a register budget must not change the
work), and every result saying what its cycles are. Every figure here is the
sim model's ESTIMATE; the tests compare them with each other, never with
hardware."""

from __future__ import annotations

import json
import re
from dataclasses import replace

from cli_helpers import run_cli as run
from ptxopt.kernels.corpus import get
from ptxopt.equivalence.launch import Launch
from ptxopt.evaluate import Candidate, evaluate
from ptxopt.evaluate.candidate import Settings, objective_for, settings_for
from ptxopt.evaluate.keys import request_key

PERF = Launch(None, (128, 1, 1), origin="options", role="performance", source="options")


def test_one_rule_for_the_default_objective():
    assert objective_for(Candidate.from_corpus("gemm_tile_4x4x4")) == "latency"  # single-warp family
    assert objective_for(Candidate.from_corpus("cuda_saxpy")) == "throughput"  # the manifest's performance launch
    text = get("cuda_saxpy").ptx_text()
    assert objective_for(Candidate(text)) == "latency"  # a file with no performance launch
    assert objective_for(Candidate(text, performance=PERF)) == "throughput"
    assert objective_for(Candidate(text, performance=PERF), "latency") == "latency"  # an explicit one wins
    s = settings_for(Candidate.from_corpus("cuda_saxpy"), Settings())
    assert s.objective == "throughput" and s.arch == "sm_89"


def test_objective_and_performance_launch_are_in_the_key():
    c = Candidate.from_corpus("cuda_saxpy", "vec_ld")
    keys = {request_key(c, settings_for(c, Settings(objective=o))) for o in ("latency", "throughput")}
    keys.add(request_key(replace(c, performance=PERF), settings_for(c, Settings(objective="throughput"))))
    assert len(keys) == 3


def test_a_register_budget_is_estimated_on_the_same_work():
    """Unknown grid: the blocks are assumed from the original kernel's
    occupancy, and every candidate runs that many -- not its own."""
    c = replace(Candidate.from_corpus("triton_attention", ""), performance=PERF)
    base = evaluate(c, cache=None)
    spilled = evaluate(replace(c, pipeline="maxnreg_32"), cache=None)  # 32 registers: more blocks fit
    assert base.objective == spilled.objective == "throughput"
    n = {int(re.search(r"grid assumed: (\d+) blocks", r.performance).group(1)) for r in (base, spilled)}
    assert len(n) == 1, (base.performance, spilled.performance)
    assert any("uncalibrated" in x for x in base.notes) and base.expected_error is None
    lat = evaluate(replace(c, pipeline="maxnreg_32"), cache=None, objective="latency")
    assert lat.objective == "latency" and lat.performance is None and lat.expected_error


def test_eval_states_its_objective_and_launch(tmp_path):
    p = tmp_path / "saxpy.ptx"
    p.write_text(get("cuda_saxpy").ptx_text())
    r = run("eval", str(p), "--passes", "vec_ld", "--no-cache", "--json", "--perf-block", "128",
            "--perf-grid", "4096")
    assert r.exit_code == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["objective"] == "throughput" and "grid 4096x1x1" in d["performance"]
    r = run("eval", str(p), "--passes", "vec_ld", "--no-cache", "--json", "--perf-block", "128",
            "--objective", "latency")
    d = json.loads(r.stdout)
    assert d["objective"] == "latency" and d["performance"] is None
    r = run("eval", str(p), "--passes", "vec_ld", "--no-cache", "--perf-block", "128")
    assert "objective    throughput of the whole launch (uncalibrated): performance launch: grid unknown" in r.stdout


def test_triton_metadata_gives_a_performance_launch_without_a_grid():
    from ptxopt.ptx.parser import parse
    from ptxopt.triton.contract_from_triton import triton_performance

    m = parse(get("triton_vector_add").ptx_text())
    p = triton_performance(m, {"num_warps": 4, "shared": 0})
    assert p.grid is None and p.block == (128, 1, 1) and p.role == "performance" and p.origin == "triton"
    assert "grid unknown" in p.describe()
