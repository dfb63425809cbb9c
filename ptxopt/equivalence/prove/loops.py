"""``ptxopt.equivalence.prove.loops`` is :mod:`ptxopt.equivalence.prove.loop_paths`: the old name stays importable (the README and examples use it)."""

# re-export stub written by the package codemod (tools/package_codemod.py): the same module object
import sys

from ptxopt.equivalence.prove import loop_paths as _moved

sys.modules[__name__] = _moved
