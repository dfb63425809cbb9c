"""Running the ``ptxopt`` CLI in-process from tests, stdout and stderr apart."""

from __future__ import annotations

from click.testing import CliRunner

from ptxopt.cli import cli


def run_cli(*args, input=None):
    """``ptxopt ARGS`` in this process; ``input``: what stdin holds (bytes or str)."""
    try:
        runner = CliRunner(mix_stderr=False)
    except TypeError:  # click >= 8.2 keeps stderr apart already
        runner = CliRunner()
    return runner.invoke(cli, [str(a) for a in args], input=input, catch_exceptions=False)
