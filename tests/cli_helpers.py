"""Running the ``ptxopt`` CLI from tests: in-process, stdout and stderr apart;
as a child that takes Ctrl-C as a terminal's foreground job does."""

from __future__ import annotations

import sys

from click.testing import CliRunner

from ptxopt.cli import cli


def run_cli(*args, input=None):
    """``ptxopt ARGS`` in this process; ``input``: what stdin holds (bytes or str)."""
    try:
        runner = CliRunner(mix_stderr=False)
    except TypeError:  # click >= 8.2 keeps stderr apart already
        runner = CliRunner()
    return runner.invoke(cli, [str(a) for a in args], input=input, catch_exceptions=False)


#: Set SIGINT to its default, then become the command (the same process: its pid, session and group).
_DEFAULT_SIGINT = ("import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); "
                   "os.execv(sys.argv[1], sys.argv[1:])")


def with_default_sigint(argv: list) -> list:
    """``argv`` (its first item a path, e.g. ``sys.executable``) started with SIGINT at its default
    disposition. A child inherits an *ignored* SIGINT -- a suite started as a background job of a
    non-interactive shell has one, and Python then never installs its handler -- so a test of what
    Ctrl-C does must not take the disposition from whatever started pytest."""
    return [sys.executable, "-c", _DEFAULT_SIGINT, *map(str, argv)]
