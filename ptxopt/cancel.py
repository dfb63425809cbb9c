"""``ptxopt.cancel`` is :mod:`ptxopt.support.cancel`: the old name stays importable (the README and examples use it)."""

# re-export stub written by the package codemod (tools/package_codemod.py): the same module object
import sys

from ptxopt.support import cancel as _moved

sys.modules[__name__] = _moved
