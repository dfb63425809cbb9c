"""Transform passes: one module per family, each pass a small frozen dataclass.

See :mod:`ptxopt.passes.base` for the pass API (parameters, options, aliases,
conflicts, the canonical name), :mod:`ptxopt.passes.registry` for how a pass
module declares its passes and how names are looked up,
:mod:`ptxopt.passes.families` for conflict families. The learning layer's action
list is not here: it is :mod:`ptxopt.search.actions`.
"""

from ptxopt.passes.base import ChangeReport, FunctionPass, IllegalPass, Pass, PassError, Refused, Site, check
from ptxopt.passes.registry import (PluginPassError, get_pass_class, pass_kinds, pass_names, pass_registry, register,
                                    unregister)

__all__ = ["Pass", "FunctionPass", "ChangeReport", "Site", "PassError", "IllegalPass", "Refused", "check",
           "pass_registry", "pass_kinds", "pass_names", "get_pass_class", "register", "unregister", "PluginPassError"]
