"""``ptxopt.executor.base`` is :mod:`ptxopt.executor.interface`: the old name stays importable (the README and examples use it)."""

# re-export stub written by the package codemod (tools/package_codemod.py): the same module object
import sys

from ptxopt.executor import interface as _moved

sys.modules[__name__] = _moved
