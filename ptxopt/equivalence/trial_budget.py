"""How much the interpreter's differential check does by default.

These figures are settings of every evaluation (its cache key, the CLI's
defaults, :class:`ptxopt.evaluate.Settings`), read far more often than the
interpreter runs: a candidate the prover settles never starts it. They live
here, not in :mod:`ptxopt.equivalence.interpret`, so that naming them does
not import numpy and the interpreter (the start-up of ``ptxopt eval``).
:mod:`~ptxopt.equivalence.interpret` re-exports them.
"""

from __future__ import annotations

#: Seeds of the regular trials (each seed runs ``trials`` launches).
DEFAULT_SEEDS = (0,)

#: Regular interpreter launches per seed: the first four entries of
#: ``interpret.TRIAL_PLAN`` cover every input flavour and every schedule.
DEFAULT_TRIALS = 4

#: ``ptxopt verify``'s default ``--min-coverage``.
DEFAULT_MIN_COVERAGE = 0.5
