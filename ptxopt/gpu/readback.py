"""What the GPU harness makes of the buffers it copies back (no CuPy).

Durations from the clock buffer (:func:`launch_durations`), their
statistics (:func:`summarize`), and the bit-for-bit comparison of a
candidate's outputs with the reference kernel's
(:func:`compare_outputs`, :func:`nondeterministic_buffers`).  Plain numpy,
tested on CPU.
"""

from __future__ import annotations

import numpy as np

from ptxopt.gpu.errors import HarnessError
from ptxopt.gpu.clock_instrument import SENTINEL


def launch_durations(clk: np.ndarray) -> np.ndarray:
    """Per launch (row), the maximum duration over threads. Raises a
    :class:`HarnessError` if any thread left the sentinel."""
    clk = np.atleast_2d(clk)
    missing = int((clk == SENTINEL).sum())
    if missing:
        raise HarnessError("error", f"{missing} thread-launch(es) recorded no duration (an exit without the "
                           "clock store?)")
    return clk.max(axis=1)


def summarize(values) -> dict:
    """Median, IQR (p75 - p25), quartiles, min, max, mean of ``values``."""
    x = np.asarray(values, dtype=np.float64)
    if x.size == 0:
        return {"median": None, "iqr": None, "p25": None, "p75": None, "min": None, "max": None, "mean": None, "n": 0}
    p25, med, p75 = np.percentile(x, [25, 50, 75])
    return {"median": float(med), "iqr": float(p75 - p25), "p25": float(p25), "p75": float(p75),
            "min": float(x.min()), "max": float(x.max()), "mean": float(x.mean()), "n": int(x.size)}


def nondeterministic_buffers(names, first, second) -> list[str]:
    """Buffers whose bytes differ between two runs of the same kernel on the
    same inputs."""
    out = []
    for name, a, b in zip(names, first, second):
        if a is None or b is None:
            continue
        if a.tobytes() != b.tobytes():
            out.append(name)
    return out


def compare_outputs(names, reference, candidate, *, ignore=(), seed: int = 0, flavour: str = "random"):
    """The first bit-wise difference (a :class:`ptxopt.equivalence.interpret.Mismatch`) or None."""
    from ptxopt.equivalence.interpret import compare_buffers

    ref = [None if n in ignore else a for n, a in zip(names, reference)]
    cand = [None if n in ignore else a for n, a in zip(names, candidate)]
    return compare_buffers(names, ref, cand, seed, flavour)


__all__ = ["launch_durations", "summarize", "nondeterministic_buffers", "compare_outputs"]
