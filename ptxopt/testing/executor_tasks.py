"""Tasks that misbehave on purpose, for the executor tests (importable by any worker: spawn, Ray)."""

from __future__ import annotations

import os
import signal
from pathlib import Path


class Fatal(RuntimeError):
    """Stands for an error that is not one task's problem (an unusable cache)."""


def task(arg):
    """``("ok", x)`` -> x*2; ``("raise", _)`` raises; ``("fatal", _)`` raises :class:`Fatal`;
    ``("die", _)`` kills its worker every time; ``("die-once", marker)`` the first time only;
    ``("pid", _)`` -> this process's pid."""
    what, x = arg
    if what == "ok":
        return x * 2
    if what == "raise":
        raise ValueError(f"task {x} failed")
    if what == "fatal":
        raise Fatal("the cache is unusable")
    if what == "die" or (what == "die-once" and not Path(x).exists()):
        if what == "die-once":
            Path(x).touch()
        os.kill(os.getpid(), signal.SIGKILL)
    if what == "pid":
        return os.getpid()
    return x
