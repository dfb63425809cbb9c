"""The one vocabulary of equivalence verdicts, with its trust order.

Every layer that answers "does the rewritten kernel compute what the original
computed?" -- :func:`ptxopt.optimize`, the ``VerifyEach`` instrument, the
evaluator behind ``eval``/``search``/``train`` and the CLI -- answers with a
:class:`Verdict` decided by :func:`ptxopt.equivalence.decision`. Adding a
verdict means adding a member here (with its rank and meaning) and the rule
that produces it in ``decide``; nothing else spells verdicts out.

A verdict is a ``str`` (``Verdict.EQUAL == "equal"``): it is written to JSON,
cache rows and reports as its value, and old rows read back unchanged.
"""

from __future__ import annotations

from enum import Enum


class Verdict(str, Enum):
    """The answer to "same behaviour?", weakest first (see :attr:`rank`)."""

    DIFFER = "differ"
    INCONCLUSIVE = "inconclusive"
    UNCHECKED = "unchecked"
    EQUAL = "equal"
    PROVED = "proved"
    HINTS_ONLY = "hints-only"
    IDENTICAL = "identical"

    __str__ = str.__str__
    __format__ = str.__format__

    @property
    def rank(self) -> int:
        """The trust order: a module's verdict is its weakest entry's."""
        return _ORDER.index(self)

    @property
    def trusted(self) -> bool:
        """Equivalence was established (by construction, proof or interpreter)."""
        return self in TRUSTED

    @property
    def meaning(self) -> str:
        return MEANING[self]


_ORDER = list(Verdict)

MEANING = {
    Verdict.DIFFER: "a counterexample: a differing value, or the candidate fails (faults, is rejected by ptxas) "
                    "where the original does not",
    Verdict.INCONCLUSIVE: "nothing differed, but equivalence was not established (with the reason)",
    Verdict.UNCHECKED: "the caller asked for no check (optimize(verify=False))",
    Verdict.EQUAL: "the interpreter ran both on the check launch and every compared byte agreed",
    Verdict.PROVED: "the translation validator proved both equivalent for all inputs and launches",
    Verdict.HINTS_ONLY: "differs only in hints the hardware's results cannot depend on: equal by construction",
    Verdict.IDENTICAL: "the printed module did not change",
}

#: Verdicts that establish equivalence: only these candidates may be used or be a search's best.
TRUSTED = frozenset({Verdict.EQUAL, Verdict.PROVED, Verdict.HINTS_ONLY, Verdict.IDENTICAL})

#: What :func:`ptxopt.optimize` returns the rewritten text under (UNCHECKED only when asked for).
ACCEPTED = TRUSTED | {Verdict.UNCHECKED}

#: Every verdict's value, strongest first (the evaluator's result vocabulary; cache rows are checked against it).
VALUES = tuple(v.value for v in reversed(_ORDER) if v is not Verdict.UNCHECKED)


def weakest(verdicts) -> Verdict | None:
    """The least trusted of ``verdicts`` (None for none)."""
    vs = [Verdict(v) for v in verdicts]
    return min(vs, key=lambda v: v.rank) if vs else None


__all__ = ["Verdict", "TRUSTED", "ACCEPTED", "VALUES", "MEANING", "weakest"]
