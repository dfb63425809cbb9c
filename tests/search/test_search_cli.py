"""``ptxopt search``: JSON, trajectories, plot, input errors, budgets, resume.

Every run passes ``--cache`` in a temporary folder (never ~/.cache). Runs
that need a cold cache get their own; the rest share one for the module.
"""

from __future__ import annotations

import json
import re

import pytest
from click.testing import CliRunner

from ptxopt.cli import cli
from ptxopt.kernels.corpus import get
from ptxopt.search import N_ACTIONS, episodes, read_jsonl

SMALL = "gemm_tile_2x2x2"


def run(*args):
    return CliRunner().invoke(cli, ["search", *map(str, args)])


@pytest.fixture(scope="module")
def shared_cache(tmp_path_factory):
    return tmp_path_factory.mktemp("search_cli") / "eval.sqlite"


def search_json(*args):
    r = run(*args, "--json", "-")
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


def test_help():
    r = CliRunner().invoke(cli, ["search", "--help"])
    assert r.exit_code == 0
    for opt in ("--strategy", "--budget", "--max-steps", "--beam-width", "--record", "--json", "--plot", "--cache"):
        assert opt in r.output
    assert "search" in CliRunner().invoke(cli, ["--help"]).output


def test_json_to_stdout_then_resume_from_the_cache(tmp_path):
    cache = tmp_path / "eval.sqlite"
    d = search_json(SMALL, "--cache", cache)
    assert {"kernels", "summary"} <= set(d)
    assert d["cycles_kind"] == "ESTIMATE" and d["strategy"] == "greedy" and d["backend"] == "sim"
    assert d["cache"] == str(cache) and cache.exists()
    assert d["interrupted"] is False
    [k] = d["kernels"]
    assert k["kernel"] == SMALL and k["family"] == "gemm_tile" and k["error"] is None
    assert k["cycles_kind"] == "ESTIMATE"
    assert k["best_cycles"] <= k["baseline_cycles"] and k["evaluations"] > 1
    assert k["improvement_pct"] == pytest.approx(100 * (1 - k["best_cycles"] / k["baseline_cycles"]))
    s = d["summary"]
    assert s["kernels"] == 1 and s["searched"] == 1 and s["errors"] == 0
    assert s["evaluations"] == k["evaluations"]
    assert s["cache_hit_rate"] < 1.0  # a cold cache

    # the same command again: every evaluation is read from the cache, same answer
    again = search_json(SMALL, "--cache", cache)
    [k2] = again["kernels"]
    assert again["summary"]["cache_hit_rate"] == 1.0
    assert k2["cache_hits"] == k2["evaluations"] == k["evaluations"]
    assert (k2["pipeline"], k2["best_cycles"], k2["baseline_cycles"]) == (k["pipeline"], k["best_cycles"],
                                                                          k["baseline_cycles"])


def test_table_and_summary_without_json(shared_cache, tmp_path):
    out = tmp_path / "r.json"
    r = run(SMALL, "--cache", shared_cache, "--json", out)
    assert r.exit_code == 0, r.output
    assert SMALL in r.stdout and "ESTIMATE" in r.stdout and "evaluations:" in r.stdout
    d = json.loads(out.read_text())
    assert d["kernels"][0]["kernel"] == SMALL and d["summary"]["kernels"] == 1


def test_record_writes_readable_trajectories(shared_cache, tmp_path):
    rec = tmp_path / "traj.jsonl"
    r = run(SMALL, "--cache", shared_cache, "--record", rec, "--quiet")
    assert r.exit_code == 0, r.output
    steps = list(read_jsonl(rec))
    assert steps and {s.kernel for s in steps} == {SMALL}
    assert {s.strategy for s in steps} == {"greedy"}
    [ep] = episodes(steps)
    assert ep[-1].action == "stop" and all(len(s.action_mask) == N_ACTIONS for s in ep)
    for a, b in zip(ep, ep[1:]):
        assert b.cycles_before == a.cycles_after


def test_record_random_search_episodes(shared_cache, tmp_path):
    rec = tmp_path / "traj.jsonl"
    r = run(SMALL, "--cache", shared_cache, "--strategy", "random", "--budget", "8", "--max-steps", "2",
            "--record", rec, "--quiet")
    assert r.exit_code == 0, r.output
    steps = list(read_jsonl(rec))
    assert steps and {(s.kernel, s.strategy) for s in steps} == {(SMALL, "random")}
    assert all(e[0].step == 0 and e[0].pipeline == "" for e in episodes(steps))


def test_plot_writes_a_png(shared_cache, tmp_path):
    png = tmp_path / "imp.png"
    r = run(SMALL, "--cache", shared_cache, "--plot", png, "--quiet")
    assert r.exit_code == 0, r.output
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_unknown_target_is_a_one_line_input_error(tmp_path):
    cache = tmp_path / "eval.sqlite"
    r = run("no_such_kernel_xyz", "--cache", cache)
    assert r.exit_code == 2
    assert r.stdout == ""
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ptxopt: error:") and "no_such_kernel_xyz" in lines[0]
    assert not cache.exists()


def test_malformed_ptx_file_reports_file_line_col(tmp_path):
    bad = tmp_path / "bad.ptx"
    good = get(SMALL).ptx_text()
    bad.write_text(good.replace(".entry", ".entry 42 garbage", 1))
    cache = tmp_path / "eval.sqlite"
    r = run(bad, "--cache", cache)
    assert r.exit_code == 2
    assert re.match(rf"{re.escape(str(bad))}:\d+:\d+: error", r.stderr), r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    assert not cache.exists()  # refused before any work


@pytest.mark.parametrize("budget", ["0", "-3", "foo"])
def test_bad_budget_is_an_input_error(tmp_path, budget):
    cache = tmp_path / "eval.sqlite"
    r = run(SMALL, "--cache", cache, "--budget", budget)
    assert r.exit_code == 2
    assert r.stderr.startswith("ptxopt: error: --budget")
    assert not cache.exists()


def test_bad_strategy_is_a_usage_error(tmp_path):
    r = run(SMALL, "--cache", tmp_path / "eval.sqlite", "--strategy", "annealing")
    assert r.exit_code == 2


def test_random_budget_per_kernel(shared_cache, tmp_path):
    # a folder of two PTX files: the budget holds for each kernel
    folder = tmp_path / "ptx"
    folder.mkdir()
    for k in ("cuda_saxpy", SMALL):
        (folder / f"{k}.ptx").write_text(get(k).ptx_text())
    d = search_json(folder, "--cache", shared_cache, "--strategy", "random", "--budget", "5")
    assert d["strategy"] == "random" and d["budget"] == 5
    assert len(d["kernels"]) == 2
    assert {k["kernel"] for k in d["kernels"]} == {str(folder / "cuda_saxpy.ptx"), str(folder / f"{SMALL}.ptx")}
    for k in d["kernels"]:
        assert k["error"] is None and k["budget"] == 5
        assert 1 <= k["evaluations"] <= 5
    assert d["summary"]["evaluations"] <= 10


def test_budget_named_after_a_strategy(shared_cache):
    # --max-steps 1: every module either run measures is already in the shared cache
    g = search_json(SMALL, "--cache", shared_cache, "--max-steps", "1")["kernels"][0]
    d = search_json(SMALL, "--cache", shared_cache, "--max-steps", "1", "--strategy", "random", "--budget", "greedy")
    assert d["budget"] == "greedy"
    [k] = d["kernels"]
    assert k["budget"] == g["evaluations"] and k["evaluations"] <= g["evaluations"]


def test_unparsable_corpus_free_stdin_is_refused(tmp_path):
    r = CliRunner().invoke(cli, ["search", "-", "--cache", str(tmp_path / "c.sqlite")], input="not ptx at all\n")
    assert r.exit_code == 2
    assert re.search(r":1:1: error", r.stderr), r.stderr


def test_a_long_list_of_kernel_ids_is_a_corpus_selector_not_a_path():
    """A comma list longer than a file name can be (ENAMETOOLONG) selects those
    kernels instead of failing as an internal error."""
    from ptxopt.cli.search import resolve_kernels
    from ptxopt.kernels.corpus import select

    ids = [k.id for k in select("gemm_tile")][:40]
    assert len(",".join(ids)) > 255
    assert [c.label for c, _ in resolve_kernels(",".join(ids))] == ids
    from ptxopt.triton.cache_dir import is_cache_dir

    assert not is_cache_dir("corpus:" + ",".join(ids))  # the search command probes for a Triton cache first


def test_a_kernel_list_longer_than_a_file_name_is_a_selector_not_a_crash():
    """A comma list of kernel ids over the file system's 255-byte name limit:
    probing it as a path raises ENAMETOOLONG, which must mean "not a path"
    (a clear selector error here, exit 2), never an internal error."""
    selector = ",".join(f"no_such_kernel_{i}" for i in range(20))
    assert len(selector) > 255
    res = run(selector, "-q")
    assert res.exit_code == 2, res.output
    assert "not a corpus selector" in res.output and "internal error" not in res.output


def test_min_improvement_reports_the_baseline_when_the_gain_is_smaller(shared_cache):
    d = search_json(SMALL, "--cache", shared_cache, "--max-steps", "2", "--min-improvement", "0")
    [k] = d["kernels"]
    assert k["pipeline"] and k["improvement_pct"] > 0, "the kernel must gain something for this test to mean anything"
    high = k["improvement_pct"] + 1
    d = search_json(SMALL, "--cache", shared_cache, "--max-steps", "2", "--min-improvement", f"{high:.3f}")
    [k2] = d["kernels"]
    assert k2["pipeline"] == "" and k2["best_cycles"] == k2["baseline_cycles"] == k["baseline_cycles"]
    assert "no change worth making" in k2["note"] and k["pipeline"] in k2["note"]
    r = run(SMALL, "--cache", shared_cache, "--min-improvement", "-1")
    assert r.exit_code == 2
