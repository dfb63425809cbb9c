"""Is the rewritten kernel the same as the original? -- asked and answered here, once.

* :mod:`~ptxopt.equivalence.verdict`: the one :class:`Verdict` vocabulary and its trust order;
* :mod:`~ptxopt.equivalence.launch`: the one :class:`Launch` value (grid, block, shared bytes,
  scalars, buffers) with its :class:`Origin` and :class:`Role`, and which verdicts each origin supports;
* :mod:`~ptxopt.equivalence.launch_contract`: launches from contract files and command-line options;
* :mod:`~ptxopt.equivalence.decision`: :func:`decide` (identical -> hints-only -> proved ->
  interpreted) and :func:`decide_module`, the one decision every caller uses;
* :mod:`~ptxopt.equivalence.interpret`: the interpreter's differential check (many launches,
  flavours, schedules, layouts), with :mod:`~ptxopt.equivalence.changes` (what changed, and
  whether it ran) and :mod:`~ptxopt.equivalence.boundary` (boundary scalars);
* :mod:`~ptxopt.equivalence.observable`: the form of a module that results can depend on;
* :mod:`~ptxopt.equivalence.instrument`: the ``VerifyEach`` pass-manager instrument.

The interpreter itself is :mod:`ptxopt.interp`, the prover :mod:`ptxopt.equivalence.prove`.
Submodules are imported lazily: ``import ptxopt.equivalence`` costs nothing.
"""

from __future__ import annotations

from ptxopt.equivalence.launch import Launch, Origin, Role
from ptxopt.equivalence.verdict import Verdict

_LAZY = {"decide": "decision", "decide_module": "decision", "Decision": "decision", "Reference": "decision",
         "format_mismatch": "decision", "VerifyEach": "instrument", "EntryCheck": "instrument",
         "VerificationError": "instrument"}


def __getattr__(name):
    mod = _LAZY.get(name)
    if mod is None:
        raise AttributeError(f"module 'ptxopt.equivalence' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f"ptxopt.equivalence.{mod}"), name)


__all__ = ["Launch", "Origin", "Role", "Verdict", *_LAZY]
