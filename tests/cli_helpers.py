"""Running the ``ptxopt`` CLI in-process from tests, stdout and stderr apart."""

from __future__ import annotations

from click.testing import CliRunner

from ptxopt.cli import cli


def run_cli(*args):
    try:
        runner = CliRunner(mix_stderr=False)
    except TypeError:  # click >= 8.2 keeps stderr apart already
        runner = CliRunner()
    return runner.invoke(cli, list(args), catch_exceptions=False)
