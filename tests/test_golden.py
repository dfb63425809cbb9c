"""Golden-file pass tests: ``tests/golden/<pass>/*.ptx``.

Each file is valid PTX whose ``//`` comments carry a ``// RUN: ptxopt ... %s``
line and FileCheck directives (``// CHECK:``, ``CHECK-NEXT``, ``CHECK-NOT``,
``CHECK-LABEL``), checked with the ``filecheck`` package.

ptxopt keeps comments when it prints, so the transformed output of a golden
file would still contain its own ``// CHECK:`` lines and every check would
match itself. The driver therefore runs the command on a copy whose RUN,
CHECK and COM lines are blanked (line numbers unchanged, so reports that
name lines stay meaningful). ``2>&1`` at the end of a RUN line checks
stdout and stderr together (``--stats`` reports go to stderr).

The CHECK lines are written and reviewed by hand; nothing regenerates them.
Each file states, in prose, what the pass must do to that kernel, and checks
only the lines that show it (the rewritten instructions, the refusal and its
reason, a CHECK-NOT for what must not appear), with ``{{[0-9]+}}`` for source
line numbers. A change of behaviour therefore shows up as a small diff of a
few meaningful lines that a reviewer can judge against the prose. A generator
in the style of LLVM's ``update_test_checks.py`` (there was one,
``tests/golden/update.py``, never used by any file) instead pins every line
of every function and every report line with its line number: any change to
the printer or to a file's comments rewrites whole blocks, the diff no longer
says what the test is about, and regenerating makes current behaviour the
expected one whether it is right or not. :func:`test_checks_do_not_pin_line_numbers`
keeps the files independent of their own line numbers.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from ptxopt.cli import cli

GOLDEN = Path(__file__).parent / "golden"
FILES = sorted(GOLDEN.glob("*/*.ptx"))
_DIRECTIVE = re.compile(r"^\s*//\s*(RUN|CHECK[A-Z-]*|COM)\s*:")


def run_lines(text: str) -> list[str]:
    return [m.group(1).strip() for m in re.finditer(r"^\s*//\s*RUN:(.*)$", text, re.M)]


def blank_directives(text: str) -> str:
    return "\n".join("" if _DIRECTIVE.match(line) else line for line in text.split("\n"))


def run_command(cmd: str, path: Path) -> tuple[int, str]:
    """Run one ``ptxopt ...`` RUN line in-process; returns (exit code, output)."""
    merge = cmd.endswith("2>&1")
    if merge:
        cmd = cmd[: -len("2>&1")].strip()
    argv = [str(path) if a == "%s" else a for a in shlex.split(cmd)]
    assert argv and argv[0] == "ptxopt", f"RUN line must start with ptxopt: {cmd}"
    res = CliRunner().invoke(cli, argv[1:])
    if res.exception and not isinstance(res.exception, SystemExit):
        raise res.exception
    # ptxopt writes every report to stderr before it prints the PTX, so a
    # shell's `2>&1` shows stderr first; reproduce that order.
    return res.exit_code, (res.stderr + res.stdout) if merge else res.stdout


def filecheck(check_file: Path, output: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "filecheck", str(check_file)],
        input=output, capture_output=True, text=True,
    )


@pytest.mark.parametrize("path", FILES, ids=[f"{p.parent.name}/{p.stem}" for p in FILES])
def test_golden(path: Path, tmp_path: Path):
    text = path.read_text()
    runs = run_lines(text)
    assert runs, f"{path}: no // RUN: line"
    assert re.search(r"^\s*//\s*CHECK", text, re.M), f"{path}: no CHECK lines"
    work = tmp_path / path.name
    work.write_text(blank_directives(text))
    for cmd in runs:
        code, out = run_command(cmd, work)
        assert code == 0, f"{cmd} exited {code}:\n{out}"
        fc = filecheck(path, out)
        assert fc.returncode == 0, f"{path.name}: FileCheck failed\n{fc.stdout}{fc.stderr}\n--- output ---\n{out}"


_PINNED_LINE = re.compile(r"^\s*//\s*CHECK[A-Z-]*:.*(\b\w+:\d+: |\bline \d+\b)")


def test_checks_do_not_pin_line_numbers():
    """Report lines name PTX lines (``k:36: ...``, ``at line 39``): a check
    matches them with ``{{[0-9]+}}``, so editing a file's prose or adding a
    case above does not change every check below it."""
    pinned = [f"{p.relative_to(GOLDEN)}:{n}: {line.strip()}" for p in FILES
              for n, line in enumerate(p.read_text().splitlines(), 1) if _PINNED_LINE.match(line)]
    assert not pinned, "checks with literal line numbers (use {{[0-9]+}}):\n" + "\n".join(pinned)


def test_golden_directory_covers_every_pass():
    """Every registered pass has golden cases: applies, refuses, interacts."""
    from ptxopt.passes import pass_names

    missing = [n for n in pass_names() if len(list((GOLDEN / n).glob("*.ptx"))) < 3]
    assert not missing, f"passes with fewer than 3 golden cases: {missing}"


def test_driver_cannot_pass_on_self_matching_checks(tmp_path: Path):
    """A CHECK for text that only appears in the check comment itself must fail."""
    src = GOLDEN.parent / "golden_selfcheck.ptx"
    body = (
        "// RUN: ptxopt run --passes cache_cg %s\n"
        "// CHECK: this.text.is.only.in.the.comment\n"
        ".version 8.8\n.target sm_89\n.address_size 64\n"
        ".visible .entry k()\n{\n\tret;\n}\n"
    )
    p = tmp_path / src.name
    p.write_text(body)
    work = tmp_path / "work.ptx"
    work.write_text(blank_directives(body))
    code, out = run_command("ptxopt run --passes cache_cg %s", work)
    assert code == 0
    assert filecheck(p, out).returncode != 0
