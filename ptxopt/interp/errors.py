"""Why an interpretation stopped.

Every failure the interpreter reports is an :class:`InterpError`; the
subclasses say *what kind* of failure so that callers can tell a broken
kernel (a memory fault, a barrier no thread can pass) from a limit of the
interpreter itself (:class:`UnsupportedInstruction`). None of them is ever
swallowed: a kernel that cannot be interpreted exactly gives an error, never a
silently wrong answer.

Messages name the PTX line and instruction, and for per-thread failures the
first offending thread as ``ctaid=(x,y,z) tid=(x,y,z)``, so a fault in a
transformed kernel can be found in its text.
"""

from __future__ import annotations


class InterpError(Exception):
    """The kernel cannot be run to the end."""

    kind = "error"


class UnsupportedInstruction(InterpError):
    """An opcode, modifier or operand form the interpreter does not implement."""

    kind = "unsupported"


class MemoryFault(InterpError):
    """An access outside every buffer, to the wrong state space, misaligned,
    or a store to read-only memory: the GPU would raise an illegal-address or
    misaligned-address error."""

    kind = "fault"


class BarrierError(InterpError):
    """Threads wait at a barrier that can never complete (divergent arrival,
    different barriers, or a barrier inside a divergent call)."""

    kind = "barrier"


class WarpSyncError(InterpError):
    """A warp-collective (``shfl.sync``, ``vote.sync``, ``ldmatrix``, ``mma``...)
    whose member lanes never all arrive."""

    kind = "warp-sync"


class KernelTrap(InterpError):
    """The kernel executed ``trap`` or ``brkpt``."""

    kind = "trap"


class LaunchError(InterpError):
    """The launch itself is wrong: geometry, arguments, unknown entry."""

    kind = "launch"


class StepLimit(InterpError):
    """The step budget ran out (an endless loop, or a budget set too low)."""

    kind = "step-limit"


def describe(ins) -> str:
    """``line 12: ld.global.v4.f32 {%f1, ...}, [%rd4+8]`` for messages."""
    ops = ", ".join(str(o) for o in ins.operands)
    guard = ""
    if ins.guard:
        guard = f"@{'!' if ins.guard_neg else ''}{ins.guard} "
    text = f"{guard}{ins.full_opcode} {ops}".strip()
    return f"line {ins.line}: {text}" if ins.line else text


def thread_name(cta, t: int) -> str:
    """``ctaid=(0,0,0) tid=(3,0,0)`` for thread ``t`` (linear index) of ``cta``."""
    return f"ctaid={_tup(cta.ctaid)} tid={_tup(cta.tid_of(t))}"


def _tup(v) -> str:
    return "(" + ",".join(str(int(x)) for x in v) + ")"
