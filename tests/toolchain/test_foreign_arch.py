"""Older and foreign PTX: a ``.target`` no installed ptxas supports
fails with one line that names ``--arch``; ``--arch A`` compiles for A and
never rewrites ``.target``."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from ptxopt import optimize
from ptxopt.cli import cli
from ptxopt.passes.passmanager import InputRejected
from ptxopt.toolchain import UnsupportedArch
from ptxopt.toolchain.locate import select_ptxas

OLD = Path(__file__).parents[1] / "data" / "old_sm30.ptx"


def _err_lines(r) -> list[str]:
    return [ln for ln in r.stderr.splitlines() if ln.strip()]


def test_select_ptxas_names_arch_and_what_is_installed():
    with pytest.raises(UnsupportedArch) as e:
        select_ptxas((6, 5), "sm_30")
    msg = str(e.value)
    assert "'sm_30'" in msg and "--arch sm_89" in msg and ".target is left as written" in msg
    assert "(sm_50.." in msg  # what the installed ptxas do target


@pytest.mark.parametrize("command", [["compile"], ["eval", "-p", "maxnreg_128", "--no-cache"]])
def test_cli_says_it_in_one_line_exit_2(command):
    r = CliRunner().invoke(cli, [*command[:1], str(OLD), *command[1:]])
    assert r.exit_code == 2, r.output
    lines = _err_lines(r)
    assert len(lines) == 1 and "--arch" in lines[0] and "old_sm30.ptx" in lines[0], lines


def test_arch_compiles_for_it_and_keeps_target(tmp_path):
    r = CliRunner().invoke(cli, ["compile", str(OLD), "--arch", "sm_89", "-o", str(tmp_path / "k.cubin")])
    assert r.exit_code == 0 and "for sm_89" in r.output
    r = CliRunner().invoke(cli, ["run", "-p", "maxnreg_128", "--arch", "sm_89", str(OLD)])
    assert r.exit_code == 0 and "\n.target sm_30\n" in r.stdout and ".maxnreg 128" in r.stdout
    assert not _err_lines(r)  # compile-checked for sm_89: no "not compile-checked" note


def test_optimize_refuses_then_takes_arch():
    src = OLD.read_text()
    with pytest.raises(InputRejected, match="--arch"):
        optimize(src, "maxnreg_128")
    res = optimize(src, "maxnreg_128", arch="sm_89", min_improvement=0)  # the arch is checked, not the gain
    assert res.arch == "sm_89" and res.changed and "\n.target sm_30\n" in res.ptx
    assert str(res.verdict) in ("hints-only", "proved", "equal")
