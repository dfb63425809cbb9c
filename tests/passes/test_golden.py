"""Golden-file pass tests: ``tests/golden/<pass>/*.ptx``.

Each file is valid PTX whose ``//`` comments carry one or more RUN lines and
FileCheck directives (``CHECK:``, ``CHECK-NEXT``, ``CHECK-NOT``,
``CHECK-LABEL``), checked with the ``filecheck`` package.

RUN lines (the grammar this driver accepts; anything else fails the file)::

    // RUN: [not] ptxopt ARGS... %s [2>&1] [| filecheck [--check-prefix=NAME] %s]

* ``ptxopt ARGS...`` runs in-process (``%s`` is the file). It must exit 0;
  its stdout is checked -- with ``2>&1`` its stderr, then its stdout (ptxopt
  writes every report before the PTX, so that is the order a shell shows).
* ``not ptxopt ...`` is an expected failure: the command must exit non-zero,
  and not with the internal-error code (a crash is never the expected
  failure, as LLVM's ``not`` fails on a crash). Its **stderr** is checked
  (the diagnostic is what such a line is about); with ``2>&1`` stderr, then
  stdout.
* ``| filecheck --check-prefix=NAME %s`` checks the output against the
  file's ``NAME:``, ``NAME-NEXT:``, ``NAME-NOT:``, ``NAME-LABEL:`` ... lines
  (NAME: capitals, digits, ``_``). Without the pipe the prefix is ``CHECK``,
  so the files written with one RUN line read as before. Several RUN lines
  may share a prefix (two spellings of one pipeline must print the same).

So one file holds every variant of a pass and its refusals::

    // RUN: ptxopt run --passes cache_cg %s
    // RUN: ptxopt run --passes cache_ld{op=cs} %s | filecheck --check-prefix=CS %s
    // RUN: not ptxopt run --passes cache_cg,cache_cs %s | filecheck --check-prefix=CONFLICT %s
    // CHECK: ld.global.cg.f32 %f1, [%rd2];
    // CS: ld.global.cs.f32 %f1, [%rd2];
    // CONFLICT: conflicting passes: 'cache_cg' and 'cache_cs'

A file fails when a command exits the wrong way, its output does not match
its prefix's lines, a RUN line names a prefix the file has no lines for, or
the file has directive lines of a prefix that no RUN line checks (they would
never be read). ``tests/passes/test_golden.py``'s ``test_harness_*`` tests show each
of these failing.

ptxopt keeps comments when it prints, so the transformed output of a golden
file would still contain its own check lines and every check would match
itself. The driver therefore runs the command on a copy whose RUN, COM and
check lines (of every prefix the file uses) are blanked (line numbers
unchanged, so reports that name lines stay meaningful).

The check lines are written and reviewed by hand; nothing regenerates them.
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

import contextlib
import io
import re
import shlex
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner

from ptxopt.cli import cli
from ptxopt.cli.exitcodes import INTERNAL

GOLDEN = Path(__file__).parents[1] / "golden"
FILES = sorted(GOLDEN.glob("*/*.ptx"))
_RUN = re.compile(r"^\s*//\s*RUN:(.*)$", re.M)
_PREFIX = re.compile(r"[A-Z][A-Z0-9_]*")
#: a directive line: ``// NAME:`` or ``// NAME-SUFFIX:`` (NEXT, NOT, LABEL, SAME, DAG, EMPTY, COUNT-n)
_DIRECTIVE = re.compile(r"^\s*//\s*([A-Z][A-Z0-9_]*)(?:-(?:NEXT|NOT|LABEL|SAME|DAG|EMPTY|COUNT-\d+))?\s*:")
_NOT_CHECKS = ("RUN", "COM")


class GoldenError(AssertionError):
    """A golden file whose commands or checks failed (the message says which RUN line and why)."""


@dataclass(frozen=True)
class Run:
    """One RUN line: the ptxopt command, how it must exit, and what checks its output."""

    line: str  # as written, for messages
    argv: tuple[str, ...]  # ptxopt's arguments, "%s" still in place
    prefix: str = "CHECK"
    expect_failure: bool = False  # `not ptxopt ...`
    merge: bool = False  # `2>&1`


def parse_run(line: str) -> Run:
    """A RUN line's text (after ``RUN:``) as a :class:`Run`; GoldenError for what the driver does not accept."""
    command, bar, pipe = line.partition("|")
    prefix = "CHECK"
    if bar:
        words = shlex.split(pipe)
        if not words or words[0] != "filecheck" or "%s" not in words:
            raise GoldenError(f"RUN: {line}: pipe into `filecheck [--check-prefix=NAME] %s` only")
        rest = [w for w in words[1:] if w != "%s"]
        if len(rest) == 2 and rest[0] == "--check-prefix":
            rest = [f"--check-prefix={rest[1]}"]
        if len(rest) > 1 or (rest and not rest[0].startswith("--check-prefix=")):
            raise GoldenError(f"RUN: {line}: filecheck takes --check-prefix=NAME here, not {' '.join(rest)}")
        if rest:
            prefix = rest[0].split("=", 1)[1]
            if not _PREFIX.fullmatch(prefix) or prefix in _NOT_CHECKS:
                raise GoldenError(f"RUN: {line}: check prefix {prefix!r} must be capitals, digits and _ "
                                  "(and not RUN or COM)")
    words = shlex.split(command)
    expect_failure = bool(words) and words[0] == "not"
    if expect_failure:
        words = words[1:]
    merge = bool(words) and words[-1] == "2>&1"
    if merge:
        words = words[:-1]
    if not words or words[0] != "ptxopt":
        raise GoldenError(f"RUN: {line}: the command must be `[not] ptxopt ...`")
    return Run(line.strip(), tuple(words[1:]), prefix, expect_failure, merge)


def run_lines(text: str) -> list[Run]:
    return [parse_run(m.group(1)) for m in _RUN.finditer(text)]


def directive_prefixes(text: str) -> set[str]:
    """The prefixes of the file's directive lines (RUN and COM left out)."""
    found = {m.group(1) for line in text.split("\n") if (m := _DIRECTIVE.match(line))}
    return found - set(_NOT_CHECKS)


def blank_directives(text: str, prefixes=("CHECK",)) -> str:
    """``text`` with its RUN, COM and ``prefixes`` lines emptied (line numbers kept)."""
    blank = {*_NOT_CHECKS, *prefixes}

    def directive(line: str) -> bool:
        m = _DIRECTIVE.match(line)
        return m is not None and m.group(1) in blank

    return "\n".join("" if directive(line) else line for line in text.split("\n"))


def run_command(run: Run, path: Path) -> tuple[int, str]:
    """Run one RUN line's ptxopt command in-process; returns (exit code, the output its checks read)."""
    argv = [str(path) if a == "%s" else a for a in run.argv]
    res = CliRunner().invoke(cli, argv)
    if res.exception and not isinstance(res.exception, SystemExit):
        raise res.exception
    # ptxopt writes every report to stderr before it prints the PTX, so a
    # shell's `2>&1` shows stderr first; reproduce that order.
    if run.merge:
        return res.exit_code, res.stderr + res.stdout
    return res.exit_code, res.stderr if run.expect_failure else res.stdout


def filecheck(check_file: Path, output: str, prefix: str = "CHECK") -> tuple[int, str]:
    """Run the ``filecheck`` package's command (its console entry point, in
    this process: a subprocess per RUN line cost ~0.2 s) on ``output``;
    returns (its exit code, its messages)."""
    from filecheck.main import main

    with tempfile.TemporaryDirectory() as tmp:
        given = Path(tmp) / "output"
        given.write_text(output)
        messages = io.StringIO()
        with contextlib.redirect_stdout(messages), contextlib.redirect_stderr(messages):
            try:
                main(["filecheck", f"--check-prefix={prefix}", f"--input-file={given}", str(check_file)])
            except SystemExit as e:
                return (e.code if isinstance(e.code, int) else 1), messages.getvalue()
    raise GoldenError(f"filecheck returned without an exit code (not a check run?): {messages.getvalue()}")


def check_file(path: Path, workdir: Path) -> None:
    """Run every RUN line of the golden file ``path`` (on a blanked copy in
    ``workdir``) and check its exit and its output; GoldenError if anything fails."""
    text = path.read_text()
    runs = run_lines(text)
    if not runs:
        raise GoldenError(f"{path}: no // RUN: line")
    used = {r.prefix for r in runs}
    written = directive_prefixes(text)
    for r in runs:
        if r.prefix not in written:
            raise GoldenError(f"{path.name}: RUN: {r.line}: the file has no {r.prefix}: lines to check its output")
    unread = sorted(written - used)
    if unread:
        raise GoldenError(f"{path.name}: lines with prefix {', '.join(unread)} that no RUN line checks "
                          "(add `| filecheck --check-prefix=NAME %s` to a RUN line)")
    work = workdir / path.name
    work.write_text(blank_directives(text, used))
    for r in runs:
        code, out = run_command(r, work)
        if r.expect_failure and code == 0:
            raise GoldenError(f"{path.name}: RUN: {r.line}: exited 0, but `not` expects a failure:\n{out}")
        if r.expect_failure and code == INTERNAL:
            raise GoldenError(f"{path.name}: RUN: {r.line}: an internal error is never the expected failure:\n{out}")
        if not r.expect_failure and code != 0:
            raise GoldenError(f"{path.name}: RUN: {r.line}: exited {code}:\n{out}")
        code, messages = filecheck(path, out, r.prefix)
        if code != 0:
            raise GoldenError(f"{path.name}: RUN: {r.line}: FileCheck ({r.prefix}) failed\n{messages}"
                              f"\n--- output ---\n{out}")


@pytest.mark.parametrize("path", FILES, ids=[f"{p.parent.name}/{p.stem}" for p in FILES])
def test_golden(path: Path, tmp_path: Path):
    check_file(path, tmp_path)


_PINNED_LINE = re.compile(r"^\s*//\s*[A-Z][A-Z0-9_-]*:.*(\b\w+:\d+: |\bline \d+\b)")


def test_checks_do_not_pin_line_numbers():
    """Report lines name PTX lines (``k:36: ...``, ``at line 39``): a check
    matches them with ``{{[0-9]+}}``, so editing a file's prose or adding a
    case above does not change every check below it."""
    pinned = [f"{p.relative_to(GOLDEN)}:{n}: {line.strip()}" for p in FILES
              for n, line in enumerate(p.read_text().splitlines(), 1)
              if _PINNED_LINE.match(line) and not re.match(r"\s*//\s*(RUN|COM)\b", line)]
    assert not pinned, "checks with literal line numbers (use {{[0-9]+}}):\n" + "\n".join(pinned)


def test_golden_directory_covers_every_pass():
    """Every registered pass has golden cases: applies, refuses, interacts."""
    from ptxopt.passes import pass_names

    missing = [n for n in pass_names() if len(list((GOLDEN / n).glob("*.ptx"))) < 3]
    assert not missing, f"passes with fewer than 3 golden cases: {missing}"


# ---------------------------------------------------------------------------
# the driver itself: each way a golden file can be wrong must fail it

KERNEL = """
.version 8.8
.target sm_89
.address_size 64

.visible .entry k(.param .u64 k_param_0)
{
	.reg .f32 %f<2>;
	.reg .b64 %rd<3>;
	ld.param.u64 %rd1, [k_param_0];
	cvta.to.global.u64 %rd2, %rd1;
	ld.global.f32 %f1, [%rd2];
	st.global.f32 [%rd2+4], %f1;
	ret;
}
"""

GOOD = """// RUN: ptxopt run --passes cache_cg %s
// RUN: ptxopt run --passes cache_ld{op=cg} %s
// RUN: ptxopt run --passes cache_ld{op=cs} --stats %s 2>&1 | filecheck --check-prefix=CS %s
// RUN: not ptxopt run --passes cache_cg,cache_cs %s | filecheck --check-prefix CONFLICT %s
// CHECK: ld.global.cg.f32 %f1, [%rd2];
// CS: cache_cs: 1 changed
// CS: ld.global.cs.f32 %f1, [%rd2];
// CONFLICT: ptxopt: error: conflicting passes: 'cache_cg' and 'cache_cs'
"""


def _check(tmp_path: Path, header: str) -> None:
    src = tmp_path / "src"
    src.mkdir(exist_ok=True)
    path = src / "case.ptx"
    path.write_text(header + KERNEL)
    check_file(path, tmp_path)


def test_harness_passes_a_good_file_with_several_run_lines(tmp_path: Path):
    _check(tmp_path, GOOD)


@pytest.mark.parametrize("header, why", [
    (GOOD.replace("// CS: ld.global.cs.f32", "// CS: ld.global.cg.f32"), r"FileCheck \(CS\) failed"),
    (GOOD.replace("// CS: cache_cs: 1 changed", "// CS-NOT: cache_cs: 1 changed"), r"FileCheck \(CS\) failed"),
    (GOOD.replace("not ptxopt run --passes cache_cg,cache_cs", "not ptxopt run --passes cache_cs"),
     "exited 0, but `not` expects a failure"),
    (GOOD.replace("// RUN: not ptxopt", "// RUN: ptxopt"), "exited 2"),
    (GOOD.replace("// CONFLICT: ptxopt: error: conflicting", "// CONFLICT: ptxopt: error: conflicted"),
     r"FileCheck \(CONFLICT\) failed"),
    (GOOD.replace("// CS: cache_cs: 1 changed\n// CS: ld.global.cs.f32 %f1, [%rd2];\n", ""),
     "has no CS: lines"),
    (GOOD + "// CV: ld.global.cv.f32\n", "prefix CV that no RUN line checks"),
    (GOOD + "// CS-NEXT: this.text.is.only.in.the.comment\n", r"FileCheck \(CS\) failed"),
    ("// RUN: ptxopt run --passes cache_cg %s\n// CHECK: this.text.is.only.in.the.comment\n",
     r"FileCheck \(CHECK\) failed"),
], ids=["wrong-line", "not-line-matches", "not-succeeds", "plain-fails", "wrong-diagnostic", "missing-prefix",
        "unread-prefix", "self-match-named", "self-match-default"])
def test_harness_fails_a_wrong_golden_file(tmp_path: Path, header: str, why: str):
    with pytest.raises(GoldenError, match=why):
        _check(tmp_path, header)


def test_harness_never_expects_an_internal_error(tmp_path: Path, monkeypatch):
    """ptxopt's internal-error exit (a bug outside the passes) fails a `not` line even when its message matches."""
    import importlib

    def crash(*args, **kw):
        raise RuntimeError("a bug")

    monkeypatch.setattr(importlib.import_module("ptxopt.ptx.emit"), "emit", crash)  # ptxopt.ptx.emit is also a function
    monkeypatch.setattr(importlib.import_module("ptxopt.ptx.layout"), "emit", crash)  # run prints through ptxopt.ptx.layout
    with pytest.raises(GoldenError, match="an internal error is never the expected failure"):
        _check(tmp_path, "// RUN: not ptxopt run --passes cache_cs %s | filecheck --check-prefix=ERR %s\n"
                         "// ERR: a bug\n")


@pytest.mark.parametrize("line", [
    "ptxopt run %s | grep ld",
    "ptxopt run %s | filecheck --match-full-lines %s",
    "ptxopt run %s | filecheck --check-prefix=cs %s",
    "ptxopt run %s | filecheck --check-prefix=RUN %s",
    "ptxopt run %s | filecheck",
    "python -c 1",
    "not not ptxopt run %s",
])
def test_harness_refuses_run_lines_it_does_not_understand(line: str):
    with pytest.raises(GoldenError):
        parse_run(line)
