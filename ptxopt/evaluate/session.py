"""An evaluation session: the owner of the evaluator's memos.

Across candidates the evaluator remembers the parsed originals (with the
modules of the pipelines run on each: :mod:`ptxopt.evaluate.prefix`), ptxas
compiles, SASS listings and estimates by cubin, proofs and the originals'
sides of proofs, the originals' interpreter runs, loop-control slices, the
keys' fingerprints and the action mask's facts per printed module. Each is a
field of an :class:`EvaluationSession`. :func:`ptxopt.evaluate.evaluate_many`
runs in one (the caller's, else the active one), each worker process of the
pool runs in its own, and each search meter holds the one active when it was
made; a cold start is a new session (:meth:`EvaluationSession.cold`), not a
walk over module tables.

The modules that fill the memos sit below the evaluator, so they reach
their memo through a :class:`~ptxopt.support.session_state.Slot` of the
active session (:meth:`EvaluationSession.active`); outside every session they
share the process's default one, as callers that never open a session
always have.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

from ptxopt.support.session_state import SessionState, current


class EvaluationSession:
    """The evaluator's memos (each made on first use; see the module doc)."""

    __slots__ = ("state",)

    def __init__(self, state: SessionState | None = None) -> None:
        self.state = state if state is not None else SessionState()

    @classmethod
    def current(cls) -> "EvaluationSession":
        """The session active in this context (else the process's default one)."""
        return cls(current())

    @classmethod
    def cold(cls) -> "EvaluationSession":
        """A new session, after the front end's process-wide memos (printed
        text, instruction facts, analyses) are forgotten: what a benchmark of
        a cold first look runs in."""
        from ptxopt.ptx import identity_memo
        from ptxopt.support.bounded_memo import clear_group

        identity_memo.clear_all()
        clear_group("front_end")
        return cls()

    @contextmanager
    def active(self) -> Iterator["EvaluationSession"]:
        """Run the block (and helper threads given its context) in this session."""
        with self.state.active():
            yield self

    def __eq__(self, other) -> bool:
        return isinstance(other, EvaluationSession) and other.state is self.state

    def __hash__(self) -> int:
        return id(self.state)

    # -- the memos, one field each ------------------------------------------------------------
    @property
    def originals(self):
        """(sha256 of an original text, ptxas environment) -> :class:`~ptxopt.evaluate.prepare.Original`
        (each with its pipelines' modules)."""
        from ptxopt.evaluate import prepare as frontend

        return self.state.memo(frontend._MEMO)

    @property
    def fingerprints(self) -> dict:
        """(settings, ptxas environment) -> what every cache key includes."""
        from . import keys

        return self.state.memo(keys._FINGERPRINTS)

    @property
    def moves(self):
        """Action-mask facts and feature vectors per printed module (the in-process level)."""
        from . import move_memo

        return self.state.memo(move_memo._LOCAL)

    @property
    def compiles(self):
        """ptxas results (or rejections) by text, arch, flags and ptxas binary."""
        from ptxopt.toolchain import ptxas

        return self.state.memo(ptxas._MEMO)

    @property
    def listings(self):
        """SASS listings by cubin digest and decoder."""
        from ptxopt.measure import cubin_memo

        return self.state.memo(cubin_memo._LISTINGS)

    @property
    def estimates(self):
        """Sim estimates by cubin digest and everything else the model reads."""
        from ptxopt.measure import cubin_memo

        return self.state.memo(cubin_memo.ESTIMATES)

    @property
    def loop_slices(self) -> dict:
        """Loop counts by printed loop-control slice and launch."""
        from ptxopt.measure import loop_slice

        return self.state.memo(loop_slice._CACHE)

    @property
    def original_runs(self):
        """The originals' interpreter runs per (reference, launch, seed, trial)."""
        from ptxopt.equivalence import decision

        return self.state.memo(decision._RUNS)

    @property
    def proofs(self):
        """Translation-validation results per pair of texts."""
        from ptxopt.equivalence import prove

        return self.state.memo(prove._MEMO)

    @property
    def proof_originals(self):
        """The originals' sides of proofs (graph, oracle, block runs)."""
        from ptxopt.equivalence.prove import original_memo

        return self.state.memo(original_memo._ENTRIES)


def cold_start() -> EvaluationSession:
    """A cold session (:meth:`EvaluationSession.cold`) made the active one of this
    context from now on: a benchmark's "forget everything" at its top level."""
    session = EvaluationSession.cold()
    session.state.enter()
    return session


__all__ = ["EvaluationSession", "cold_start"]
