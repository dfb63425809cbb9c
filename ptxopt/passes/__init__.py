"""Transform passes: one module per family, each pass a small frozen dataclass.

See :mod:`ptxopt.passes.base` for the pass API, :mod:`ptxopt.passes.registry`
for names and action order, :mod:`ptxopt.passes.families` for conflicts.
"""

from ptxopt.passes.base import ChangeReport, FunctionPass, IllegalPass, Pass, PassError, Refused, Site, check
from ptxopt.passes.registry import STOP, action_names, get_pass_class, pass_names, pass_registry

__all__ = ["Pass", "FunctionPass", "ChangeReport", "Site", "PassError", "IllegalPass", "Refused", "check",
           "pass_registry", "pass_names", "action_names", "get_pass_class", "STOP"]
