"""What a function's proof found: its verdict and reason, and per block.

Its own module so that every proof (the block matcher :mod:`.match`, the
loop simulation :mod:`.loop_sim`) reports in the same shape without one
importing the other.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class BlockDetail:
    block: int
    label: str | None
    proved: bool
    reason: str = ""


@dataclass
class FunctionDetail:
    name: str
    verdict: str  # Verdict.PROVED or Verdict.INCONCLUSIVE
    reason: str
    blocks: list[BlockDetail]


__all__ = ["BlockDetail", "FunctionDetail"]
