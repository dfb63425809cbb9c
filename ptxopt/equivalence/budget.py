"""A step budget for one equivalence check, shared by every interpreter run in it.

The interpreter's own limits are per run (``max_steps``, and
``DEFAULT_SCALAR_STEPS`` for defaulted scalars); a check runs the original
and the candidate on many launches, and a caller that offers several launch
contracts (:func:`ptxopt.equivalence.decide_module`) may run them all. A
compiler hook cannot wait for that: on a flash-attention kernel with 128
threads one check took 30-55 s and ended ``inconclusive`` (a thread-serial
launch alone is ~100k steps, ~5 s). A :class:`StepBudget` bounds the whole
check, deterministically (counted in interpreter steps, not seconds, so the
same text gets the same verdict on any machine and load).

Spending it never strengthens a verdict: the run that would pass the budget
stops at it, the check ends ``inconclusive`` with a note that starts with
:data:`BUDGET_SPENT`, and no further launch contract is tried; a difference
found before that is still a ``differ``. A stopped run of the original is
not memoised (a larger budget must be able to run it).

The unit is the interpreter's step: one instruction issued for a group of
threads (a warp-wide instruction in lockstep, one thread's in the
thread-serial schedule), checked at backward branches, so a run may pass the
budget by the length of one loop iteration (per CTA).
"""

from __future__ import annotations

from dataclasses import dataclass

#: How a note (and the hook's and ``optimize()``'s reason) says the budget ended the check.
BUDGET_SPENT = "interpreter budget spent"


@dataclass
class StepBudget:
    """``steps`` interpreter steps for one check; ``used`` so far."""

    steps: int
    used: int = 0

    def __post_init__(self) -> None:
        if int(self.steps) <= 0:
            raise ValueError(f"a step budget must be positive, got {self.steps}")

    @property
    def remaining(self) -> int:
        return max(0, self.steps - self.used)

    @property
    def spent(self) -> bool:
        return self.used >= self.steps

    def limit(self, own: int) -> tuple[int, bool]:
        """The ``max_steps`` for the next run whose own limit is ``own``, and
        whether the budget (not ``own``) is what binds it."""
        left = max(1, self.remaining)
        return (left, True) if left < own else (own, False)

    def spend(self, steps: int) -> None:
        self.used += max(0, int(steps))

    def note(self, where: str) -> str:
        return (f"{BUDGET_SPENT}: {self.used} of {self.steps} steps used, stopped {where}; "
                "the rest of the check did not run")


def as_budget(steps) -> StepBudget | None:
    """``steps`` (an int, a :class:`StepBudget` or None: no budget) as a fresh budget."""
    if steps is None:
        return None
    if isinstance(steps, StepBudget):
        return steps
    return StepBudget(int(steps))


__all__ = ["StepBudget", "BUDGET_SPENT", "as_budget"]
