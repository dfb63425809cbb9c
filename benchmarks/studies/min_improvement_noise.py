"""How far the sim's estimate moves for rewrites that change the code but little else.

The sim model is deterministic (the same cubin always gets the same
estimate), so the noise that ``--min-improvement`` must sit above is not run
to run: it is the small moves of an estimate when ptxas re-schedules or
re-allocates around a rewrite. This script reads every candidate of the
committed greedy trajectories (each with its parent state's cycles) and
prints the distribution of the relative changes that are not exactly zero:
how many candidates move the estimate by less than 0.1%, 0.5%, 1%, 2% and
5%. Every figure is an ESTIMATE; nothing is run.

    python benchmarks/studies/min_improvement_noise.py [TRAJECTORIES.jsonl]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

DEFAULT = Path(__file__).resolve().parents[2] / "corpus" / "trajectories" / "greedy_sm_89.jsonl"
EDGES = (0.1, 0.5, 1.0, 2.0, 5.0)


def changes(path: Path) -> np.ndarray:
    """Relative changes (percent, signed: positive = faster) of every candidate vs its parent."""
    out = []
    for line in path.read_text().splitlines():
        step = json.loads(line)
        before = step.get("cycles_before")
        if not before:
            continue
        out += [100.0 * (1.0 - c / before) for c in step.get("candidates", {}).values() if c]
    return np.asarray(out)


def main(argv: list[str]) -> None:
    path = Path(argv[0]) if argv else DEFAULT
    ch = changes(path)
    moved = ch[ch != 0.0]
    print(f"{path.name}: {len(ch)} candidates, {len(moved)} with a nonzero estimated change (ESTIMATES)")
    print(f"{'|change| below':>16} {'candidates':>11} {'share of moved':>15} {'of which gains':>15}")
    for e in EDGES:
        small = moved[np.abs(moved) < e]
        print(f"{e:>15g}% {len(small):>11} {len(small) / max(1, len(moved)):>14.1%} {int((small > 0).sum()):>15}")


if __name__ == "__main__":
    main(sys.argv[1:])
