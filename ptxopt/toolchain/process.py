"""Run one toolchain binary with a hard timeout.

All tool invocations go through :func:`run_tool` so they share the same
behaviour: stdout and stderr are merged (ptxas interleaves ``info`` lines
and diagnostics, and the order matters when attributing them), output is
decoded leniently, a hung tool is killed and reported as
:class:`ToolchainTimeout`, and a binary that cannot be executed is reported
as :class:`ToolNotFound` instead of a raw ``OSError``.
"""

from __future__ import annotations

import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from .errors import ToolchainTimeout, ToolNotFound


@dataclass(frozen=True)
class ToolRun:
    returncode: int
    output: str  # stdout and stderr, interleaved as the tool wrote them
    wall_time_s: float


def run_tool(
    argv: Sequence[str | Path],
    *,
    timeout: float,
    cwd: str | Path | None = None,
) -> ToolRun:
    """Run ``argv`` and capture its output; never raises for a non-zero exit."""
    argv = [str(a) for a in argv]
    tool = Path(argv[0]).name
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
