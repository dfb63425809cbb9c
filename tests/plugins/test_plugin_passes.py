"""A user's own passes: the ``ptxopt.passes`` entry-point group and
``ptxopt.passes.register``; names in every pipeline string; code in the cache key.

Also runs the example package's own tests (``examples/mul_pow2/tests``).
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import pytest
from click.testing import CliRunner

from ptxopt.cli import cli
from ptxopt.passes.registry import code_digests
from ptxopt.passes import FunctionPass, PluginPassError, pass_kinds, pass_names, register, registry, unregister
from ptxopt.passes.pipeline import Pipeline, PipelineError

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "mul_pow2"

# the example's own tests, collected here too
_spec = importlib.util.spec_from_file_location("mul_pow2_example_tests", EXAMPLE / "tests" / "test_mul_pow2.py")
_example = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_example)
mul_pow2 = _example.mul_pow2
test_example_golden = _example.test_golden
test_example_rewrites_only_powers_of_two = _example.test_rewrites_only_powers_of_two
test_example_rewrite_table = _example.test_rewrite_table
MulPow2 = _example.MulPow2
SCALE = EXAMPLE / "tests" / "scale.ptx"


@dataclass(frozen=True)
class Nop(FunctionPass):
    kind: ClassVar[str] = "nop_plugin"
    family: ClassVar[str] = "test"

    def run_function(self, fn, report, module) -> None:
        pass


@pytest.fixture
def clean():
    yield
    for kind in ("nop_plugin", "mul_pow2", "ep_pass"):
        unregister(kind)


def test_register_names_the_pass_everywhere(clean):
    assert "nop_plugin" not in pass_names()
    with pytest.raises(PipelineError, match="unknown pass 'nop_plugin'.*ptxopt.passes.register"):
        Pipeline.parse("nop_plugin")
    assert register(Nop) is Nop
    assert pass_kinds()[-1] == "nop_plugin" and "nop_plugin" in pass_names()
    assert str(Pipeline.parse("nop_plugin,maxnreg_128")) == "nop_plugin,maxnreg_128"
    unregister("nop_plugin")
    assert "nop_plugin" not in pass_names()


def test_register_refuses_what_would_break_names(clean):
    with pytest.raises(PluginPassError, match="built-in pass name"):
        register(type("X", (Nop,), {"kind": "maxnreg_128", "__module__": __name__}))
    with pytest.raises(PluginPassError, match="not a dataclass subclass"):
        register(int)
    with pytest.raises(PluginPassError, match="identifier"):
        register(dataclass(frozen=True)(type("Y", (Nop,), {"kind": "a-b", "__module__": __name__})))
    register(Nop)
    other = dataclass(frozen=True)(type("Z", (Nop,), {"__module__": __name__}))
    with pytest.raises(PluginPassError, match="already registered"):
        register(other)
    assert register(other, replace=True) is other
    assert register(Nop, replace=True) is Nop


def test_entry_point_group_is_loaded_lazily(monkeypatch, clean, tmp_path):
    """An installed plugin: its name is listed without importing it; the first
    use imports it; a broken one fails with one line naming it."""
    pkg = tmp_path / "ep_plugin_pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(textwrap.dedent("""
        from dataclasses import dataclass
        from typing import ClassVar
        from ptxopt.passes import FunctionPass

        @dataclass(frozen=True)
        class EpPass(FunctionPass):
            kind: ClassVar[str] = "ep_pass"
            family: ClassVar[str] = "test"
            def run_function(self, fn, report, module):
                pass
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(registry, "_PENDING", {"ep_pass": "ep_plugin_pkg:EpPass", "broken": "no_such_mod:X"})
    assert "ep_pass" in pass_names() and "ep_plugin_pkg" not in sys.modules
    assert str(Pipeline.parse("ep_pass")) == "ep_pass" and "ep_plugin_pkg" in sys.modules
    with pytest.raises(PipelineError, match="pass 'broken' .*no_such_mod:X.* cannot be imported"):
        Pipeline.parse("broken")
    monkeypatch.setattr(registry, "_PENDING", {"wrong": "ep_plugin_pkg:EpPass"})
    with pytest.raises(PipelineError, match="must be the pass's kind"):
        Pipeline.parse("wrong")


def test_plugin_code_enters_the_front_digest(clean, tmp_path, monkeypatch):
    """Registering a plugin changes the front digest (every cache key has it),
    and so does changing the plugin's code: no result of the old code is served."""
    base = code_digests()["front"]
    register(Nop)
    with_nop = code_digests()["front"]
    assert with_nop != base and code_digests()["evaluator"] == code_digests()["evaluator"]
    unregister("nop_plugin")
    assert code_digests()["front"] == base

    digests = []
    for body in ("pass", "pass  # edited"):
        mod = tmp_path / f"plug_{len(digests)}"
        mod.mkdir()
        (mod / "__init__.py").write_text("from .p import P\n")
        (mod / "p.py").write_text(textwrap.dedent(f"""
            from dataclasses import dataclass
            from typing import ClassVar
            from ptxopt.passes import FunctionPass

            @dataclass(frozen=True)
            class P(FunctionPass):
                kind: ClassVar[str] = "ep_pass"
                family: ClassVar[str] = "test"
                def run_function(self, fn, report, module):
                    {body}
        """))
        monkeypatch.syspath_prepend(str(tmp_path))
        cls = importlib.import_module(mod.name).P
        register(cls, replace=True)
        digests.append(code_digests()["front"])
    assert digests[0] != digests[1] and base not in digests


def test_cli_run_eval_explain_take_a_plugin_pass(mul_pow2, tmp_path):
    cache = str(tmp_path / "c.sqlite")
    r = CliRunner().invoke(cli, ["run", "-p", "mul_pow2,maxnreg_128", "--stats", str(SCALE)])
    assert r.exit_code == 0, r.output
    assert "mul_pow2: 2 changed" in r.output and "shl.b32" in r.output
    r = CliRunner().invoke(cli, ["eval", str(SCALE), "-p", "mul_pow2", "--cache", cache])
    assert r.exit_code == 0, r.output
    assert "verdict      equal" in r.output or "verdict      proved" in r.output
    r = CliRunner().invoke(cli, ["explain", str(SCALE), "-p", "mul_pow2"])
    assert r.exit_code == 0 and "after:" in r.output, r.output
    r = CliRunner().invoke(cli, ["passes"])
    assert r.exit_code == 0 and "mul_pow2" in r.output and "strength-reduction" in r.output


def test_search_explores_a_plugin_pass_as_an_extra_action(mul_pow2, tmp_path):

    args = ["search", str(SCALE), "-q", "--max-steps", "2", "--cache", str(tmp_path / "c.sqlite")]
    r = CliRunner().invoke(cli, [*args, "--json", "-"])
    assert r.exit_code == 0 and "mul_pow2" not in json.loads(r.stdout)["kernels"][0]["pipeline"]
    r = CliRunner().invoke(cli, [*args, "--actions", "+mul_pow2", "--json", "-"])
    assert r.exit_code == 0, r.output
    (k,) = json.loads(r.stdout)["kernels"]
    assert "mul_pow2" in k["pipeline"].split(",") and k["verdict"] in ("equal", "proved")
    assert k["best_cycles"] < k["baseline_cycles"]  # the sim estimate: shl is cheaper than mul.lo


@pytest.mark.parametrize("extra, why", [
    (["--actions", "mul_pow2"], "write each action as +NAME (add) or -NAME"),
    (["--actions", "+no_such_pass"], "unknown pass 'no_such_pass'"),
    (["--actions", "+mul_pow2,maxnreg_128"], "write each action as +NAME (add) or -NAME"),
    (["--actions", "-no_such_pass"], "cannot drop 'no_such_pass': not a built-in action"),
    (["--actions", "+mul_pow2", "--record", "t.jsonl"], "not with --record"),
])
def test_search_actions_errors_are_one_line_exit_2(mul_pow2, extra, why, tmp_path):
    r = CliRunner().invoke(cli, ["search", str(SCALE), "-q", "--cache", str(tmp_path / "c.sqlite"),
                                 *[str(tmp_path / a) if a.endswith(".jsonl") else a for a in extra]])
    assert r.exit_code == 2 and why in r.output, r.output


def test_dropped_action_is_never_tried(tmp_path):
    """--actions -NAME: the action greedy takes first is left out of the search."""
    args = ["search", "gemm_tile_2x2x2", "-q", "--max-steps", "1", "--cache", str(tmp_path / "c.sqlite"), "--json", "-"]
    r = CliRunner().invoke(cli, args)
    assert r.exit_code == 0, r.output
    first = json.loads(r.stdout)["kernels"][0]["pipeline"]
    assert first, "the kernel must have a first greedy step for this test to mean anything"
    r = CliRunner().invoke(cli, [*args, "--actions", f"-{first}"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["kernels"][0]["pipeline"] != first


def test_extra_actions_leave_the_learning_layers_mask_alone(mul_pow2):
    from ptxopt.evaluate import Candidate
    from ptxopt.search import N_ACTIONS
    from ptxopt.search.state import State

    root = State.root(Candidate(SCALE.read_text(), name="scale"), extra_actions=("mul_pow2",))
    assert [m.action for m in root.moves()][-1] == "mul_pow2"
    assert root.action_mask().shape == (N_ACTIONS,) and root.action_mask()[-1]  # stop stays last and legal
    assert root.child("mul_pow2").pipeline.passes[0].kind == "mul_pow2"


def test_the_code_digest_of_a_fresh_process_counts_plugin_passes():
    """A cache key may be a process's first touch of ptxopt: the digest that
    counts plugin passes lives in the pass registry itself, so nothing needs
    importing first for a plugin's code to be in it (registered in the child
    process: its ``front`` differs from ptxopt's own)."""
    import subprocess

    probe = ("from ptxopt.support import digests\n"
             "from ptxopt.passes.registry import code_digests, register\n"
             "from dataclasses import dataclass\n"
             "from typing import ClassVar\n"
             "from ptxopt.passes import FunctionPass\n"
             "@dataclass(frozen=True)\n"
             "class P(FunctionPass):\n"
             "    kind: ClassVar[str] = 'probe_plugin'\n"
             "    family: ClassVar[str] = 'test'\n"
             "    def run_function(self, fn, report, module): pass\n"
             "first = code_digests()['front']\n"
             "register(P)\n"
             "print(code_digests()['front'] != first, digests.own_code_digests()['front'] != code_digests()['front'])\n")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["True", "True"], out.stdout + out.stderr
