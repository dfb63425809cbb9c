"""``ptxopt.corpus`` is :mod:`ptxopt.kernels.corpus`: the old name stays importable (the README and examples use it)."""

# re-export stub written by the package codemod (tools/package_codemod.py): the same module object
import sys

from ptxopt.kernels import corpus as _moved

sys.modules[__name__] = _moved
