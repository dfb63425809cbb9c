"""``ptxopt.equivalence.contract`` is :mod:`ptxopt.equivalence.launch_contract`: the old name stays importable (the README and examples use it)."""

# re-export stub written by the package codemod (tools/package_codemod.py): the same module object
import sys

from ptxopt.equivalence import launch_contract as _moved

sys.modules[__name__] = _moved
