"""Sizes the interpreter refuses before it allocates anything.

A launch's memory is known before it runs: the parameter buffers, the
``.global``/``.const`` variables, per CTA (one at a time) its shared memory
and per thread its registers, ``.local`` frame and call parameters, and
with coverage a flag per thread of the whole grid and per buffer byte.  An
oversized launch (a contract's ``buffer_bytes: 1e11``, ``--grid
1000000000``) would otherwise end in ``MemoryError`` after minutes of
swapping, or in random bytes generated at 150 MB/s for hours.  Two kinds of
limit, both a :class:`MemoryLimit` (a :class:`LaunchError`) naming the limit:

* **the hardware's**: no GPU launches a block with more than
  :data:`MAX_SHARED_PER_BLOCK` bytes of shared memory (sm_90's opt-in
  maximum, the largest of any target) or a thread with more than
  :data:`MAX_LOCAL_PER_THREAD` bytes of local memory (CUDA's per-thread
  limit); such a launch cannot run anywhere;
* **the interpreter's memory budget**: :data:`DEFAULT_GIB` GiB unless
  ``$PTXOPT_INTERP_MEMORY`` (GiB; the CLI's ``--interp-memory`` sets it, so
  that worker processes inherit it) says otherwise.
"""

from __future__ import annotations

import os

from ptxopt.interp.errors import LaunchError

DEFAULT_GIB = 4.0
ENV = "PTXOPT_INTERP_MEMORY"
MAX_SHARED_PER_BLOCK = 227 * 1024
MAX_LOCAL_PER_THREAD = 512 * 1024
GIB = 1 << 30


class MemoryLimit(LaunchError):
    """A launch larger than the hardware allows or the interpreter's memory budget."""

    kind = "memory-limit"


def budget_bytes() -> int:
    """The interpreter's memory budget in bytes (``$PTXOPT_INTERP_MEMORY`` GiB, else :data:`DEFAULT_GIB`)."""
    raw = os.environ.get(ENV)
    try:
        gib = float(raw) if raw else DEFAULT_GIB
    except ValueError:
        gib = DEFAULT_GIB
    return int(gib * GIB) if gib > 0 else int(DEFAULT_GIB * GIB)


def _size(n: int) -> str:
    if n >= GIB:
        return f"{n / GIB:.3g} GiB"
    if n >= 1 << 20:
        return f"{n / (1 << 20):.3g} MiB"
    if n >= 1 << 10:
        return f"{n / (1 << 10):.4g} KiB"
    return f"{n} bytes"


def require(nbytes: int, what: str) -> None:
    """Raise :class:`MemoryLimit` when ``nbytes`` (for ``what``) exceed the budget."""
    limit = budget_bytes()
    if nbytes > limit:
        raise MemoryLimit(f"{what} needs {_size(nbytes)} of interpreter memory, over its budget of "
                          f"{_size(limit)} (raise it with --interp-memory GiB or ${ENV})")


def check_shared(total: int) -> None:
    if total > MAX_SHARED_PER_BLOCK:
        raise MemoryLimit(f"{_size(total)} of shared memory per block: no GPU launches more than "
                          f"{_size(MAX_SHARED_PER_BLOCK)} ({MAX_SHARED_PER_BLOCK:,} bytes)")


def check_local(per_thread: int, where: str) -> None:
    if per_thread > MAX_LOCAL_PER_THREAD:
        raise MemoryLimit(f"{where}: {_size(per_thread)} of .local memory per thread: no GPU gives a thread more "
                          f"than {_size(MAX_LOCAL_PER_THREAD)} ({MAX_LOCAL_PER_THREAD:,} bytes)")


def launch_bytes(*, buffers: int, statics: int, grid_threads: int, block_threads: int, shared: int,
                 per_thread: int, coverage: bool, reads: bool) -> int:
    """Bytes a launch holds at once: buffers (their region copy, with coverage a
    flag per byte, with read footprints four bytes per byte), variables, shared
    memory of one CTA, per-thread state of one CTA, a coverage flag per thread
    of the grid."""
    per_buffer_byte = 1 + (1 if coverage else 0) + (4 if reads else 0)
    return (buffers * per_buffer_byte + statics + shared + block_threads * per_thread
            + (grid_threads if coverage else 0))


def help_text() -> str:
    return (f"Memory the PTX interpreter may use for one launch, in GiB (buffers, shared, local and "
            f"per-thread state, counted before anything is allocated; a larger launch exits 2 naming "
            f"the limit).  [default: ${ENV}, else {DEFAULT_GIB:g}]")


__all__ = ["MemoryLimit", "DEFAULT_GIB", "ENV", "MAX_SHARED_PER_BLOCK", "MAX_LOCAL_PER_THREAD", "budget_bytes",
           "require", "check_shared", "check_local", "launch_bytes", "help_text"]
