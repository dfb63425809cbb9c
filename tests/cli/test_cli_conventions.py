"""One convention across the commands, so a script drives each of them the same way.

``--json`` prints the command's one JSON document on stdout; ``--json-out
FILE`` writes the same document and keeps the text report; ``search``'s and
``train``'s old ``--json FILE`` still works, with a deprecation warning;
``verify`` takes ``--contract`` as ``run`` and ``eval`` do; ``eval`` always
shows the baseline; report objects expose attributes, never ``None->None``;
the search plot has short labels and error bars where there is a spread.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import click
import pytest

from cli_helpers import run_cli

ROOT = Path(__file__).resolve().parents[2]
KERNEL = ROOT / "tests" / "data" / "scale_add.ptx"  # outside the corpus: no manifest entry gives its launch
SMALL = "corpus:gemm_tile_2x2x2"


def _all_commands():
    """``(path, command)`` for every command of ``ptxopt``, plugin commands included."""
    from ptxopt.cli import cli

    ctx = click.Context(cli)
    out = []

    def walk(group, prefix):
        for name in group.list_commands(ctx):
            cmd = group.get_command(ctx, name)
            if isinstance(cmd, click.Group):
                walk(cmd, prefix + [name])
            else:
                out.append((" ".join(prefix + [name]), cmd))

    walk(cli, [])
    return out


def _opts(cmd) -> set[str]:
    return {o for p in cmd.params for o in getattr(p, "opts", ())}


def test_every_command_with_json_has_json_out():
    """The class, not instances: a command that prints JSON also writes it with --json-out."""
    commands = _all_commands()
    with_json = [name for name, cmd in commands if "--json" in _opts(cmd)]
    assert {"parse", "stats", "compile", "roundtrip", "run", "passes", "verify", "eval", "explain", "search",
            "corpus list"} <= set(with_json)
    missing = [name for name, cmd in commands if "--json" in _opts(cmd) and "--json-out" not in _opts(cmd)]
    assert not missing, f"--json without --json-out: {missing}"


def _stdout_equals_file(tmp_path, *args):
    out = tmp_path / "out.json"
    r = run_cli(*args, "--json", "--json-out", out)
    assert r.exit_code == 0, r.stderr
    doc = json.loads(r.stdout)  # stdout holds the JSON document and nothing else
    assert json.loads(out.read_text()) == doc and out.read_text() == r.stdout  # the same document, byte for byte
    return doc


@pytest.mark.parametrize("args", [
    ("parse", SMALL), ("stats", SMALL), ("compile", SMALL), ("passes",), ("corpus", "list", "--family", "gemm_tile"),
    ("run", SMALL, "-p", "vec_st"), ("roundtrip", SMALL, "--no-sass"),
])
def test_json_and_json_out_give_the_same_document(tmp_path, args):
    _stdout_equals_file(tmp_path, *args)


def test_json_out_alone_keeps_the_text_report(tmp_path):
    out = tmp_path / "stats.json"
    r = run_cli("stats", SMALL, "--json-out", out)
    assert r.exit_code == 0, r.stderr
    assert json.loads(out.read_text())["file"] == SMALL
    with pytest.raises(json.JSONDecodeError):
        json.loads(r.stdout)
    assert "instructions" in r.stdout
    r = run_cli("stats", SMALL, "--json-out", "-")  # '-': stdout, as --json
    assert json.loads(r.stdout)["file"] == SMALL
    r = run_cli("stats", SMALL, "--json-out", tmp_path / "no" / "such" / "dir.json")
    assert r.exit_code == 2 and "no such directory" in r.stderr
    r = run_cli("stats", SMALL, "--json-out", "a" * 5000)  # ENAMETOOLONG: one line, exit 2, no traceback
    assert r.exit_code == 2 and "too long" in r.stderr


def test_eval_json_parses_and_json_out_writes_the_same(tmp_path):
    doc = _stdout_equals_file(tmp_path, "eval", KERNEL, "--no-cache")
    assert doc["pipeline"] == "" and doc["baseline"] is None  # the baseline itself
    doc = _stdout_equals_file(tmp_path, "eval", KERNEL, "-p", "reorder_cp", "--no-cache")
    assert doc["pipeline"] == "reorder_cp" and doc["baseline"]["pipeline"] == ""
    assert doc["baseline"]["cycles"] > 0 and doc["cycles"] > 0


def test_eval_always_shows_the_baseline(tmp_path):
    cache = tmp_path / "c.sqlite"
    r = run_cli("eval", SMALL, "-p", "vec_st", "--cache", cache)
    assert r.exit_code == 0, r.stderr
    row = next(ln for ln in r.stdout.splitlines() if ln.strip().startswith("baseline"))
    assert "cycles" in row and "registers" in row and "the pipeline:" in row
    r = run_cli("eval", SMALL, "-p", "vec_st", "-p", "vec_ld", "--cache", cache, "--json")
    doc = json.loads(r.stdout)
    assert [x["pipeline"] for x in doc["results"]] == ["", "vec_st", "vec_ld"]
    r = run_cli("eval", SMALL, "-p", "vec_st", "-p", "vec_ld", "--cache", cache)
    assert "3 candidates" in r.stdout
    r = run_cli("eval", SMALL, "-p", "vec_st", "-p", "", "--cache", cache, "--json")  # given: the one baseline
    doc = json.loads(r.stdout)
    assert doc["pipeline"] == "vec_st" and doc["baseline"]["pipeline"] == ""
    r = run_cli("eval", SMALL, "-p", "vec_st", "-p", "vec_ld", "-p", "", "--cache", cache, "--json")
    assert [x["pipeline"] for x in json.loads(r.stdout)["results"]] == ["vec_st", "vec_ld", ""]  # not twice


def test_explain_json_out(tmp_path):
    _stdout_equals_file(tmp_path, "explain", SMALL)


def test_search_json_flag_and_the_deprecated_path(tmp_path):
    cache = tmp_path / "c.sqlite"
    common = ("--max-steps", "1", "--cache", cache, "-q")
    doc = _stdout_equals_file(tmp_path, "search", "gemm_tile_2x2x2", *common)
    assert doc["kernels"][0]["kernel"] == "gemm_tile_2x2x2"
    old = tmp_path / "old.json"
    r = run_cli("search", "gemm_tile_2x2x2", *common, "--json", old)
    assert r.exit_code == 0, r.stderr
    assert "deprecated" in r.stderr and f"--json-out {old}" in r.stderr
    assert json.loads(old.read_text())["kernels"][0]["kernel"] == "gemm_tile_2x2x2"
    assert "kernels searched" in r.stdout  # the text report, as before
    r = run_cli("search", "gemm_tile_2x2x2", *common, "--json", old, "--json-out", tmp_path / "other.json")
    assert r.exit_code == 2 and "give --json-out alone" in r.stderr
    r = run_cli("search", gemm := "gemm_tile_2x2x2", *common, "--json", "-")  # the old stdout form: no warning
    assert json.loads(r.stdout)["target"] == gemm and "deprecated" not in r.stderr
    # a TARGET written after --json is refused, never taken as the output
    r = run_cli("search", "--json", "gemm_tile_2x2x2", *common)
    assert r.exit_code == 2 and "--json takes no value" in r.stderr
    ptx = tmp_path / "k.ptx"
    ptx.write_text(KERNEL.read_text())
    r = run_cli("search", SMALL, "--json", ptx, *common)
    assert r.exit_code == 2 and ptx.read_text() == KERNEL.read_text()


def test_train_json_options():
    train_cmd = pytest.importorskip("ptxopt_rl.cli").train_cmd  # torch is imported only when the command runs

    assert {"--json", "--json-out"} <= _opts(train_cmd)


@pytest.mark.slow
def test_train_json_is_the_summary_and_progress_goes_to_stderr(tmp_path):
    pytest.importorskip("torch")
    doc = _stdout_equals_file(tmp_path, "train", "--bc-only", "--bc-epochs", "2", "--out", tmp_path / "o")
    assert doc["mode"] == "bc-only" and doc["bc"]["steps"] > 0
    assert json.loads((tmp_path / "o" / "train.json").read_text()) == doc


# -- verify --contract ------------------------------------------------------------

def _contract(tmp_path, grid=(4, 1, 1), block=(256, 1, 1), n=1000):
    c = tmp_path / "launch.json"
    c.write_text(json.dumps({"launch": {"grid": list(grid), "block": list(block)},
                             "params": [{"name": "n", "role": "scalar", "value": n},
                                        {"name": "a", "role": "scalar", "value": 2.0}]}))
    return c


def _transformed(tmp_path):
    r = run_cli("run", KERNEL, "-p", "reorder_cp", "-o", tmp_path / "t.ptx")
    assert r.exit_code == 0, r.stderr
    return tmp_path / "t.ptx"


def test_verify_takes_a_contract(tmp_path):
    t = _transformed(tmp_path)
    r = run_cli("verify", KERNEL, t, "--json")
    assert r.exit_code == 2 and "no launch geometry" in r.stderr  # outside the corpus, no contract
    r = run_cli("verify", KERNEL, t, "--contract", _contract(tmp_path), "--json")
    assert r.exit_code == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["status"] == "equal" and d["grid"] == [4, 1, 1] and d["block"] == [256, 1, 1]
    assert all(la["scalars"].get("n") == 1000 for la in d["launches"] if "scalars" in la and not la.get("extra"))
    # options override single fields of the file, as in run and eval
    r = run_cli("verify", KERNEL, t, "--contract", _contract(tmp_path), "--block", "64", "--json")
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["block"] == [64, 1, 1]


def test_verify_finds_the_contract_next_to_the_kernel(tmp_path):
    k = tmp_path / "scale_add.ptx"
    k.write_text(KERNEL.read_text())
    t = _transformed(tmp_path)
    _contract(tmp_path, grid=(2, 1, 1), block=(128, 1, 1)).rename(tmp_path / "scale_add.contract.json")
    r = run_cli("verify", k, t, "--json")
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["grid"] == [2, 1, 1]


def test_verify_refuses_a_bad_contract(tmp_path):
    t = _transformed(tmp_path)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"launch": {"grid": [1]}}))
    r = run_cli("verify", KERNEL, t, "--contract", bad)
    assert r.exit_code == 2 and "launch" in r.stderr and "Traceback" not in r.stderr
    wrong = tmp_path / "wrong.json"
    wrong.write_text(json.dumps({"launch": {"grid": [1], "block": [32]},
                                 "params": [{"name": "nope", "role": "scalar", "value": 1}]}))
    r = run_cli("verify", KERNEL, t, "--contract", wrong)
    assert r.exit_code == 2 and "nope" in r.stderr
    r = run_cli("verify", SMALL, SMALL, "--contract", wrong, "--manifest-entry", "gemm_tile_2x2x2")
    assert r.exit_code == 2 and "choose one" in r.stderr


# -- report objects -----------------------------------------------------------------

#: methods a report may have: renderings and copies, not data
RENDERINGS = {"to_json", "from_json", "dumps", "line", "describe", "replace", "short"}
REPORT_SUFFIXES = ("Result", "Report", "Record", "Estimate", "Check", "Summary")


def test_report_objects_expose_attributes_only():
    """Every report class in ptxopt: what it reports is an attribute or a
    property, never a method to call (``KernelReport.idle_passes()`` was one)."""
    found = []
    declares = re.compile(r"^\s*class \w+(" + "|".join(REPORT_SUFFIXES) + r")\b", re.M)
    for f in sorted((ROOT / "ptxopt").rglob("*.py")):
        text = f.read_text()
        if not declares.search(text):
            continue
        tree = ast.parse(text)
        for c in ast.walk(tree):
            if not (isinstance(c, ast.ClassDef) and c.name.endswith(REPORT_SUFFIXES)):
                continue
            for fn in c.body:
                if isinstance(fn, ast.FunctionDef) and not fn.name.startswith("_") and len(fn.args.args) == 1 \
                        and not fn.args.vararg and not fn.args.kwonlyargs and not fn.decorator_list \
                        and fn.name not in RENDERINGS:
                    found.append(f"{f.relative_to(ROOT)}: {c.name}.{fn.name}()")
    assert not found, found


def test_kernel_report_idle_passes_is_an_attribute_and_never_none_to_none():
    from ptxopt.api import BeforeAfter
    from ptxopt.triton.hook import KernelReport

    rep = KernelReport("k", "h", pipeline="vec_ld", passes=[{"pass": "vec_ld", "changed": 0,
                                                            "refused": ["misaligned"]}])
    assert rep.idle_passes == ["vec_ld: misaligned"]
    line = rep.line()
    assert "None" not in line and "registers" not in line and "vec_ld: misaligned" in line
    rep.registers = BeforeAfter(20, 20)
    assert "registers 20 (unchanged)" in rep.line()
    rep.registers, rep.changed, rep.verdict = BeforeAfter(20, 24), True, "equal"
    assert "registers 20->24" in rep.line() and "verdict equal" in rep.line()
    rep.registers = BeforeAfter(20, None)
    assert "registers 20 (after: not known)" in rep.line()


# -- the search plot ---------------------------------------------------------------

def test_search_plot_short_labels_and_error_bars():
    from ptxopt.cli.search_report import improvement_figure, improvement_range, short_labels
    from ptxopt.search import KernelResult

    assert short_labels(["/a/b/saxpy.ptx", "corpus:gemm_tile_2x2x2"]) == {
        "/a/b/saxpy.ptx": "saxpy", "corpus:gemm_tile_2x2x2": "gemm_tile_2x2x2"}
    assert set(short_labels(["/x/a/k.ptx", "/x/b/k.ptx"]).values()) == {"a/k", "b/k"}
    measured = KernelResult("/long/path/to/kernels/relu.ptx", None, "greedy", baseline_cycles=1000.0,
                            best_cycles=800.0, estimate=False, baseline_spread=20.0, best_spread=10.0)
    estimated = KernelResult("corpus:gemm_tile_2x2x2", None, "greedy", baseline_cycles=100.0, best_cycles=90.0)
    low, high = improvement_range(measured)
    assert low < measured.improvement_pct < high
    assert improvement_range(estimated) is None
    fig = improvement_figure([measured, estimated], title="t")
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["gemm_tile_2x2x2", "relu"]
    assert ax.containers and any(type(c).__name__ == "ErrorbarContainer" for c in ax.containers)
    fig = improvement_figure([estimated], title="t")  # estimates: no error bars
    assert not any(type(c).__name__ == "ErrorbarContainer" for c in fig.axes[0].containers)
