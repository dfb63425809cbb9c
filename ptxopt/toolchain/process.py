"""Run one toolchain binary with a hard timeout, and classify how it ended.

All tool invocations go through :func:`run_tool` so they share the same
behaviour: stdout and stderr are merged (ptxas interleaves ``info`` lines
and diagnostics, and the order matters when attributing them), output is
decoded leniently, a hung tool is killed and reported as
:class:`ToolchainTimeout`, and a binary that cannot be executed is reported
as :class:`ToolNotFound` instead of a raw ``OSError``.

Classified once, here: a run that ended without judging its input -- killed
by a signal (SIGSEGV, the OOM killer), out of memory, an internal error of
the tool (:data:`ptxopt.toolchain.tables.TRANSIENT_OUTPUT`) -- is run once
more and, failing again, raised as :class:`ToolCrashed`. Callers therefore
see a non-zero exit only when the tool really rejected its input; a crash or
a timeout is *transient* (never cached, never "bad input"). A timed-out run
is not repeated: the caller's limit bounds the whole call.

:func:`time_limit` caps every child's timeout in this process (and the
workers it forks): ``--timeout 5`` bounds the locator's ``--version`` probe,
ptxas and nvdisasm alike, whatever default their callers pass.
"""

from __future__ import annotations

import re
import signal
import subprocess
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from .errors import ToolchainTimeout, ToolCrashed, ToolNotFound
from .tables import TRANSIENT_OUTPUT

_TRANSIENT = tuple((re.compile(p, re.I), why) for p, why in TRANSIENT_OUTPUT)

#: the process-wide ceiling of every child's timeout (None: the callers' own), see :func:`time_limit`
_CEILING: float | None = None


@dataclass(frozen=True)
class ToolRun:
    returncode: int
    output: str  # stdout and stderr, interleaved as the tool wrote them
    wall_time_s: float


@contextmanager
def time_limit(seconds: float | None):
    """Within this block no child runs longer than ``seconds`` (None: no ceiling)."""
    global _CEILING
    old = _CEILING
    _CEILING = seconds if old is None or seconds is None else min(old, seconds)
    try:
        yield
    finally:
        _CEILING = old


def set_time_limit(seconds: float | None) -> None:
    """Set the ceiling for the rest of the process (a CLI command's ``--timeout``)."""
    global _CEILING
    _CEILING = seconds


def crash_reason(returncode: int, output: str) -> str | None:
    """Why a run ended without judging its input, in words; None when it did judge it."""
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        return f"was killed by {name}"
    if returncode != 0:
        for pattern, why in _TRANSIENT:
            if pattern.search(output):
                return why
    return None


def run_tool(
    argv: Sequence[str | Path],
    *,
    timeout: float,
    cwd: str | Path | None = None,
) -> ToolRun:
    """Run ``argv`` and capture its output; never raises for an exit that judged the input.

    Raises :class:`ToolchainTimeout`, :class:`ToolCrashed` (after one retry)
    or :class:`ToolNotFound`."""
    argv = [str(a) for a in argv]
    tool = Path(argv[0]).name
    if _CEILING is not None:
        timeout = min(timeout, _CEILING)
    run = _run_once(argv, tool, timeout, cwd)
    why = crash_reason(run.returncode, run.output)
    if why is None:
        return run
    run = _run_once(argv, tool, timeout, cwd)  # once more: a crash says nothing about the input
    again = crash_reason(run.returncode, run.output)
    if again is None:
        return run
    raise ToolCrashed(tool, again, run.output, repeated=again == why)


def _run_once(argv: list[str], tool: str, timeout: float, cwd) -> ToolRun:
    start = time.perf_counter()
    try:
        proc = subprocess.run(
            argv,
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        # subprocess.run has already killed and reaped the child.
        raise ToolchainTimeout(tool, timeout) from None
    except OSError as exc:
        raise ToolNotFound(f"cannot run {argv[0]}: {exc.strerror or exc}") from None
    wall = time.perf_counter() - start
    return ToolRun(proc.returncode, proc.stdout.decode("utf-8", "replace"), wall)
