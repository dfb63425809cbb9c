"""The memoised CFG of a function, for callers that bring no analysis
manager: :meth:`ptxopt.analysis.manager.AnalysisManager.cfg` of the
:func:`~ptxopt.analysis.manager.default_manager` (which owns the memo and
hands the CFG out frozen). Passes ask the manager they are given."""

from __future__ import annotations

from ptxopt.analysis.cfg import CFG
from ptxopt.analysis.manager import default_manager
from ptxopt.ptx.ir import Function


def cfg_of(fn: Function) -> CFG:
    """The default manager's (frozen, shared) CFG of ``fn``."""
    return default_manager().cfg(fn)

