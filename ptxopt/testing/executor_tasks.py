"""Tasks that misbehave on purpose, for the executor tests (importable by any worker: spawn, Ray)."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path


class Fatal(RuntimeError):
    """Stands for an error that is not one task's problem (an unusable cache)."""


def task(arg):
    """``("ok", x)`` -> x*2; ``("raise", _)`` raises; ``("fatal", _)`` raises :class:`Fatal`;
    ``("die", _)`` kills its worker every time; ``("die-once", marker)`` the first time only;
    ``("die-after", marker)`` every time, once ``marker`` exists (at most a minute after it starts: so a
    die-once task beside it has run before a process pool breaks; a task the pool's teardown kills before
    its body ran counts as started, and its retry alone would be its first real run);
    ``("pid", _)`` -> this process's pid."""
    what, x = arg
    if what == "ok":
        return x * 2
    if what == "raise":
        raise ValueError(f"task {x} failed")
    if what == "fatal":
        raise Fatal("the cache is unusable")
    if what == "die-after":
        deadline = time.monotonic() + 60.0
        while not Path(x).exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        os.kill(os.getpid(), signal.SIGKILL)
    if what == "die" or (what == "die-once" and not Path(x).exists()):
        if what == "die-once":
            Path(x).touch()
        os.kill(os.getpid(), signal.SIGKILL)
    if what == "pid":
        return os.getpid()
    return x
