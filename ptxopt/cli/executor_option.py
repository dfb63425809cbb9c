"""``--executor local|ray|ray:ADDRESS``: where ``search`` and ``eval`` (and ``train``'s evaluations) run.

Checked when the command line is read: an unknown executor, ``ray``
without the ``ray`` package, or a cluster address where nothing answers
(:func:`ptxopt.executor.raycluster.unreachable`) is a usage error (exit 2),
not a traceback (or minutes of silent retries) after the work has started.
"""

from __future__ import annotations

import importlib.util

import click


def _check(ctx, param, value):
    if value is None or value == "local":
        return None
    from ptxopt.executor import make_executor

    try:
        make_executor(value)
    except ValueError as e:
        raise click.BadParameter(str(e)) from None
    if importlib.util.find_spec("ray") is None:
        raise click.BadParameter("the ray executor needs Ray: pip install 'ptxopt[ray]'")
    from ptxopt.executor.raycluster import unreachable

    why = unreachable(value.partition(":")[2] or None)
    if why is not None:
        raise click.BadParameter(why)
    return value


executor_option = click.option(
    "--executor", default=None, metavar="local|ray[:ADDRESS]", callback=_check,
    help="Where the parallel work runs: 'local' (default: -j worker processes here) or a Ray cluster "
         "('ray': the one in $RAY_ADDRESS, else a private one here; 'ray:ADDRESS': auto, HOST:6379, "
         "ray://HOST:10001). -j caps the tasks in flight (0 with ray: every CPU of the cluster). "
         "This process alone writes the cache (see README, 'Running on a Ray cluster').")

__all__ = ["executor_option"]
