"""``ptxopt.host_state`` is :mod:`ptxopt.support.host_state`: the old name stays importable (the README and examples use it)."""

# re-export stub written by the package codemod (tools/package_codemod.py): the same module object
import sys

from ptxopt.support import host_state as _moved

sys.modules[__name__] = _moved
