"""Structural rewrites are proved before they are written.

A pass that changes control flow (:attr:`ptxopt.passes.base.Pass.structural`,
today ``unroll``) rewrites loops; a launch that samples a few trip counts is
no evidence that every trip count is right (an off-by-one in a guard shows at
one residue of the trip count only). :class:`StructuralProofs` watches a
pass-manager run and proves the module after each such pass against the
module before it (:func:`ptxopt.equivalence.prove.prove`: the block matcher,
the run-out loop proofs and the inductive loop simulation of
:mod:`.loop_sim`). ``ptxopt run`` writes nothing when one is not ``proved``
(exit 1, the reason said) unless ``--allow-unchecked``, and then says so.

Each pass is proved against its own input, not the pipeline's: the rest of
the module is then unchanged, so the proof is only about what the pass did.
"""

from __future__ import annotations

from dataclasses import dataclass

from ptxopt.ptx.emit import emit
from ptxopt.passes.passmanager import Instrument


@dataclass
class StructuralProof:
    """The proof of one structural pass's result: ``verdict`` as
    :func:`~ptxopt.equivalence.prove.prove` says it."""

    name: str
    verdict: str
    reason: str
    seconds: float

    def line(self) -> str:
        return f"{self.name}: {self.verdict} ({self.seconds:.2f} s): {self.reason}"

    def to_json(self) -> dict:
        return {"pass": self.name, "verdict": self.verdict, "reason": self.reason, "seconds": self.seconds}


class StructuralProofs(Instrument):
    """Proves the result of every structural pass that changed the module
    (module doc); ``proofs`` in pipeline order. Which of them let their
    rewrite stand is decided with the other stage outcomes
    (:func:`ptxopt.evaluate.stages.unproved_proofs`)."""

    needs_before = True

    def __init__(self) -> None:
        self.proofs: list[StructuralProof] = []

    def after_pass(self, p, before, after, record) -> None:
        if not getattr(p, "structural", False) or not record.changed:
            return
        from ptxopt.equivalence.prove import prove

        r = prove(emit(before), emit(after))
        self.proofs.append(StructuralProof(p.name, str(r.verdict), r.reason, r.seconds))


__all__ = ["StructuralProof", "StructuralProofs"]
