"""The cyclic garbage collector, paused over a bounded burst of allocation.

Applying a pass to a 5,000-instruction kernel allocates tens of thousands of
small containers (new instructions, operand tuples, statement lists, report
entries), none of them in a reference cycle; with the ~10^5 objects of a few
parsed modules alive, the generational collector runs a hundred times per
action mask and now and then walks every live object: 10-35 ms of a 130 ms
mask on gemm 16x16x16, for nothing to free. Pausing it over such a burst
defers that work to one collection afterwards, when the burst's garbage is
already gone by reference counting. Nesting is fine: only the outermost pause
re-enables the collector, and only if it was enabled.
"""

from __future__ import annotations

import gc
from contextlib import contextmanager


@contextmanager
def gc_paused():
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


__all__ = ["gc_paused"]
