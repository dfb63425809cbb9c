"""Rewrites the Triton hook's check did not accept, remembered between processes.

On the corpus's flash-attention and fp32-matmul kernels the hook's check
spends its whole interpreter budget (:data:`ptxopt.triton.hook.HOOK_CHECK_STEPS`,
0.4-2.5 s on this machine) and ends ``inconclusive (budget)``: Triton's PTX is
kept. The budget is counted in interpreter steps, not seconds, so the same
inputs give the same verdict every time -- and a later process compiling the
same kernel (a fresh Triton cache, a CI job) pays that time again for the
same answer. A :class:`RejectionMemo` keeps the outcome of such a check in a
file named by a digest of everything it depended on:

* the hook's key (:attr:`StagesHook.key`): ptxopt's version and the digest of
  its front end, evaluator (interpreter, prover, equivalence) and Triton
  integration, the pipeline source, ``verify``, objective, ``if_slower``,
  the step budget;
* Triton's PTX, the launch contract alternatives derived from Triton's
  metadata (their ``repr``; only contracts with no exact buffers), the ptxas
  binary, flags and architecture, and the installed numpy and bitwuzla.

Only checks that did **not** accept the rewrite are remembered, so a memo hit
can only keep Triton's own PTX -- the answer the hook gives whenever it is
unsure -- never apply a rewrite; user-given contracts are never memoised.
Files are written whole and renamed into place; one that cannot be read or
does not match its key is a miss.
"""

from __future__ import annotations

import hashlib
import json
from functools import lru_cache
from pathlib import Path

FORMAT = 1


@lru_cache(maxsize=1)
def _libraries() -> str:
    from importlib.metadata import PackageNotFoundError, version

    out = []
    for lib in ("numpy", "bitwuzla"):
        try:
            out.append(f"{lib}={version(lib)}")
        except PackageNotFoundError:
            out.append(f"{lib}=none")
    return ",".join(out)


def rejection_key(hook_key: str, ptx: str, contract, ptxas: str, flags, arch: str) -> str | None:
    """The memo key of one kernel's check, or None when it cannot be keyed
    (a contract with exact buffers, whose ``repr`` does not show them)."""
    alts = list(contract) if isinstance(contract, (list, tuple)) else [contract]
    if any(getattr(a, "buffers", None) is not None for a in alts):
        return None
    doc = [FORMAT, hook_key, hashlib.sha256(ptx.encode()).hexdigest(), [repr(a) for a in alts], str(ptxas),
           list(flags), arch, _libraries()]
    return hashlib.sha256(json.dumps(doc).encode()).hexdigest()


class RejectionMemo:
    """Outcomes of checks that did not accept a rewrite, one JSON file each under ``root``."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        self.hits = self.misses = self.writes = 0

    def get(self, key: str) -> dict | None:
        try:
            doc = json.loads((self.root / f"{key}.json").read_text())
            if doc.get("key") != key or doc.get("format") != FORMAT:
                raise ValueError("another key")
        except Exception:  # absent, unreadable, damaged: a miss
            self.misses += 1
            return None
        self.hits += 1
        return doc["outcome"]

    def put(self, key: str, outcome: dict) -> None:
        data = json.dumps({"format": FORMAT, "key": key, "outcome": outcome})
        from ptxopt.support.outputs import OutputNotWritable, write_atomic

        try:
            self.root.mkdir(parents=True, exist_ok=True)
            write_atomic(self.root / f"{key}.json", data, sync=False)
        except (OSError, OutputNotWritable):  # a read-only or full disk: simply not remembered
            return
        self.writes += 1


__all__ = ["RejectionMemo", "rejection_key"]
