"""Plugin passes that misbehave -- print to stdout, never return, raise -- stay
inside ptxopt's contract wherever a pass is applied: the action mask
(:class:`~ptxopt.search.state.State`), the pass manager (the evaluator,
``run``), :func:`ptxopt.optimize`, and ``search --json -`` (also with ``-j 2``
worker processes, through an installed entry point).

Stdout stays the JSON document's (:mod:`ptxopt.support.pass_output`); a pass that
does not return is stopped at the candidate's time limit and masked for the
rest of the search (not applied again); a pass that raises is masked.
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from ptxopt.cli import cli
from ptxopt.evaluate import Candidate
from ptxopt.passes import register, unregister
from ptxopt.passes.passmanager import PassFailure, PassManager
from ptxopt.search.state import State

ROOT = Path(__file__).resolve().parents[2]
SCALE = ROOT / "examples" / "mul_pow2" / "tests" / "scale.ptx"

#: the plugin module, as a user would install it (imported from a temporary folder)
PLUGIN = textwrap.dedent('''
    import os, time
    from dataclasses import dataclass
    from typing import ClassVar
    from ptxopt.passes import FunctionPass

    #: how long the "never returns" pass runs before it gives up (old code: waited for)
    HANG_S = 3.0
    finished = []  # one entry per application of the hanging pass that ran to its end

    @dataclass(frozen=True)
    class Noisy(FunctionPass):
        kind: ClassVar[str] = "noisy_plugin"
        family: ClassVar[str] = "test_noisy"
        def run_function(self, fn, report, module):
            print("PRINTED-BY-PLUGIN")
            os.write(1, b"WRITTEN-BY-PLUGIN\\n")

    @dataclass(frozen=True)
    class Hang(FunctionPass):
        kind: ClassVar[str] = "hang_plugin"
        family: ClassVar[str] = "test_hang"
        def run_function(self, fn, report, module):
            end = time.monotonic() + HANG_S
            while time.monotonic() < end:
                pass
            finished.append(1)

    @dataclass(frozen=True)
    class Boom(FunctionPass):
        kind: ClassVar[str] = "boom_plugin"
        family: ClassVar[str] = "test_boom"
        def run_function(self, fn, report, module):
            raise RuntimeError("boom")
''')
KINDS = {"noisy_plugin": "Noisy", "hang_plugin": "Hang", "boom_plugin": "Boom"}
MARKS = ("PRINTED-BY-PLUGIN", "WRITTEN-BY-PLUGIN")


@pytest.fixture(scope="module")
def plugin_dir(tmp_path_factory):
    """A folder holding the plugin module and its installed metadata (an entry point per pass)."""
    d = tmp_path_factory.mktemp("misbehaving")
    (d / "misbehaving_plugin.py").write_text(PLUGIN)
    info = d / "misbehaving_plugin-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: misbehaving-plugin\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(
        "[ptxopt.passes]\n" + "".join(f"{k} = misbehaving_plugin:{c}\n" for k, c in KINDS.items()))
    return d


@pytest.fixture
def plugin(plugin_dir, monkeypatch):
    """The plugin passes registered in this process."""
    monkeypatch.syspath_prepend(str(plugin_dir))
    mod = importlib.import_module("misbehaving_plugin")
    mod.finished.clear()
    for name in KINDS.values():
        register(getattr(mod, name), replace=True)
    yield mod
    for kind in KINDS:
        unregister(kind)


def _root(timeout=None, *actions) -> State:
    kw = {} if timeout is None else {"timeout": timeout}
    return State.root(Candidate(SCALE.read_text(), name="scale"), extra_actions=actions, **kw)


def _no_marks(text: str) -> bool:
    return not any(m in text for m in MARKS)


# -- prints to stdout ---------------------------------------------------------------------------------------


def _mask(plugin):
    return {m.action: m.reason for m in _root(None, "noisy_plugin").moves()}["noisy_plugin"]


def _pass_manager(plugin):
    return PassManager("noisy_plugin").run(_root().module).records[0].name


def _optimize(plugin):
    from ptxopt import optimize

    return optimize(SCALE.read_text(), "noisy_plugin", estimate=False).warnings


@pytest.mark.parametrize("where", [_mask, _pass_manager, _optimize], ids=lambda f: f.__name__.strip("_"))
def test_what_a_pass_prints_never_reaches_stdout(plugin, capfd, where):
    """Both ``print`` and a write to file descriptor 1 are kept off stdout and
    reported: on stderr, or in :func:`ptxopt.optimize`'s warnings."""
    try:
        from ptxopt.support import pass_output
    except ImportError:  # the code before stdout was kept for the output (this test then fails below)
        pass
    else:
        pass_output._reported.clear()  # reported once per pass and process
    got = where(plugin)
    out, err = capfd.readouterr()
    assert _no_marks(out), out
    said = "\n".join(got) if isinstance(got, list) else err
    assert "pass 'noisy_plugin' wrote" in said and all(m in said for m in MARKS), (got, err)


def test_search_json_on_stdout_stays_one_document(plugin, capfd, tmp_path):
    r = CliRunner().invoke(cli, ["search", str(SCALE), "-q", "--max-steps", "1", "--actions", "+noisy_plugin",
                                 "--cache", str(tmp_path / "c.sqlite"), "--json"])
    assert r.exit_code == 0, r.output
    json.loads(r.stdout)
    out, err = capfd.readouterr()
    assert _no_marks(out) and _no_marks(r.stdout), out


@pytest.mark.slow
def test_search_json_with_worker_processes_from_an_installed_plugin(plugin_dir, tmp_path):
    """The plugin installed (an entry point), ``-j 2`` worker processes: stdout
    is exactly the JSON document; the warning is on stderr."""
    import ptxopt

    code = Path(ptxopt.__file__).resolve().parent.parent  # the ptxopt under test
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(code), str(plugin_dir), os.environ.get("PYTHONPATH", "")])}
    p = subprocess.run([sys.executable, "-m", "ptxopt.cli", "search", str(SCALE), "-q", "-j", "2", "--max-steps", "1",
                        "--actions", "+noisy_plugin", "--cache", str(tmp_path / "c.sqlite"), "--json"],
                       capture_output=True, text=True, env=env, timeout=300)
    assert p.returncode == 0, p.stderr
    json.loads(p.stdout)
    assert _no_marks(p.stdout) and "pass 'noisy_plugin' wrote" in p.stderr, p.stderr


# -- never returns ------------------------------------------------------------------------------------------


def test_a_pass_that_does_not_return_is_stopped_and_masked(plugin, capfd):
    """Stopped at the limit (it never finishes), masked; the other states of
    the search mask it without applying it again; stdout is whole afterwards."""
    root = _root(0.2, "hang_plugin")
    reasons = {m.action: m.reason for m in root.moves()}
    assert reasons["hang_plugin"].startswith("timeout: the pass took longer than 0.2 s")
    child = root.legal_moves()[0].child
    assert {m.action: m.reason for m in child.moves()}["hang_plugin"].startswith("timeout: ")
    assert plugin.finished == []  # no application was waited for
    assert any(m.legal for m in root.moves())  # the rest of the mask is untouched
    print("stdout-after")
    os.write(1, b"fd-after\n")
    assert capfd.readouterr().out == "stdout-after\nfd-after\n"


def test_search_timeout_stops_a_pass_that_does_not_return(plugin, tmp_path):
    r = CliRunner().invoke(cli, ["search", str(SCALE), "-q", "--max-steps", "2", "--actions", "+hang_plugin",
                                 "--timeout", "0.3", "--cache", str(tmp_path / "c.sqlite"), "--json"])
    assert r.exit_code == 0, r.output
    (k,) = json.loads(r.stdout)["kernels"]
    assert "hang_plugin" not in k["pipeline"] and plugin.finished == []


def test_optimize_stops_passes_at_its_timeout(plugin):
    from ptxopt import optimize

    res = optimize(SCALE.read_text(), "hang_plugin", timeout=0.2, estimate=False)
    assert not res.changed and res.ptx == SCALE.read_text()
    assert str(res.verdict) == "inconclusive" and "took longer than 0.2 s" in res.reason
    assert plugin.finished == []


# -- raises -------------------------------------------------------------------------------------------------


def test_a_pass_that_raises_is_masked_and_reported(plugin, tmp_path):
    root = _root(None, "boom_plugin")
    assert {m.action: m.reason for m in root.moves()}["boom_plugin"] == "internal: RuntimeError: boom"
    with pytest.raises(PassFailure, match="pass 'boom_plugin' raised RuntimeError: boom"):
        PassManager("boom_plugin", reproducer_dir=tmp_path).run(root.module)
    r = CliRunner().invoke(cli, ["search", str(SCALE), "-q", "--max-steps", "1", "--actions", "+boom_plugin",
                                 "--cache", str(tmp_path / "c.sqlite"), "--json"])
    assert r.exit_code == 0, r.output
    assert "boom_plugin" not in json.loads(r.stdout)["kernels"][0]["pipeline"]


def test_output_is_told_to_the_pass_that_printed_it(plugin, capfd):
    """Inside one capture (an action mask), each pass is named for its own output."""
    from ptxopt.support.pass_output import captured, collecting

    with collecting() as said, captured("the mask"):
        with captured("pass 'a'"):
            os.write(1, b"from a\n")
        with captured("pass 'b'"):
            pass
        print("from the mask")
    assert [line.split(" wrote")[0] for line in said] == ["pass 'a'", "the mask"]
    assert "from a" in said[0] and "from the mask" in said[1]
    assert capfd.readouterr().out == ""
