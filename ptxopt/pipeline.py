"""``ptxopt.pipeline`` is :mod:`ptxopt.passes.pipeline`: the old name stays importable (the README and examples use it)."""

# re-export stub written by the package codemod (tools/package_codemod.py): the same module object
import sys

from ptxopt.passes import pipeline as _moved

sys.modules[__name__] = _moved
