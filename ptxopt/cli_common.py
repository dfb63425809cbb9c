"""What ``ptxopt eval``, ``search`` and ``train`` share: exit codes, the one
way to fail on bad input, the backend check, and the evaluator options.

One definition each, so the three commands cannot drift apart in wording,
defaults or exit status.
"""

from __future__ import annotations

import sys

import click

EXIT_OK, EXIT_FAILED, EXIT_INPUT, EXIT_INTERRUPTED = 0, 1, 2, 130


def fail(msg: str) -> None:
    """Report bad input on stderr and exit 2 (no traceback)."""
    click.echo(f"ptxopt: error: {msg}", err=True)
    sys.exit(EXIT_INPUT)


def check_backend(name: str) -> None:
    """Fail now, before any work, when backend ``name`` cannot run here."""
    from ptxopt.evaluate import BackendUnavailable, get_backend

    try:
        get_backend(name)
    except (BackendUnavailable, ValueError) as e:
        fail(str(e))


backend_option = click.option(
    "--backend", default="sim", show_default=True,
    help="Where cycles come from: sim (CPU estimate) or gpu (measured; needs CuPy and a GPU).")
cache_option = click.option(
    "--cache", "cache_path", default=None, metavar="PATH",
    help="Evaluation cache (SQLite) [default: $PTXOPT_CACHE or ~/.cache/ptxopt/eval.sqlite].")
timeout_option = click.option(
    "--timeout", default=600.0, show_default=True, type=click.FloatRange(min=0.1),
    help="Seconds one candidate may take.")
arch_option = click.option(
    "--arch", default=None, metavar="SM",
    help="Target architecture for ptxas and the model [default: each kernel's own .target, else sm_89].")
allow_unchecked_option = click.option(
    "--allow-unchecked", is_flag=True,
    help="Let a candidate whose equivalence with the original was not established (verdict 'inconclusive': "
         "the original cannot be interpreted under the launch, ...) be kept and reported as best. Off: such "
         "candidates are counted and never chosen.")
trials_option = click.option(
    "--trials", default=None, type=click.IntRange(1, 1000),
    help="Interpreter launches compared for equivalence [default: ptxopt.verify's].")

__all__ = ["EXIT_OK", "EXIT_FAILED", "EXIT_INPUT", "EXIT_INTERRUPTED", "fail", "check_backend", "backend_option",
           "cache_option", "timeout_option", "trials_option", "arch_option", "allow_unchecked_option"]
