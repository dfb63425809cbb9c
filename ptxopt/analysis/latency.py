"""``ptxopt.analysis.latency`` is :mod:`ptxopt.analysis.rough_latency`: the old name stays importable (the README and examples use it)."""

# re-export stub written by the package codemod (tools/package_codemod.py): the same module object
import sys

from ptxopt.analysis import rough_latency as _moved

sys.modules[__name__] = _moved
