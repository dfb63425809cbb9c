"""ptxopt: rewrite NVIDIA PTX kernels with legality-checked passes.

The public API is exactly the names in ``__all__`` (documented in the
README's "Using it from Python"); every other module is internal and may
change. Library use::

    import ptxopt
    res = ptxopt.optimize(ptx_text, "vec_ld,maxnreg_128")   # -> OptimizeResult
    res.ptx, res.verdict, res.records, res.registers        # safe text, and what was done

    m = ptxopt.parse(ptx_text, "kernel.ptx")                # the lossless IR
    ptx_again = ptxopt.emit(m)

``ptxopt.triton`` (``enable``/``disable``/``report``) runs every kernel
Triton compiles through ptxopt; it imports Triton only when enabled.
"""

import importlib

# ``emit`` is also the name of its submodule: importing ``ptxopt.ptx.emit`` anywhere
# rebinds the package attribute to the module, so a lazy ``emit`` would turn
# into a module under ``from ptxopt import emit``.  Bound here, after the
# submodule import, it stays the function (ptxopt.ptx.emit costs ~20 ms: ir only).
from ptxopt.ptx.emit import emit  # noqa: E402

# The public names are imported on first use (PEP 562): ``import ptxopt.cli``
# and ``ptxopt --help`` do not pay for the API's pass manager and pipelines.
_LAZY = {
    "optimize": "ptxopt.api", "OptimizeResult": "ptxopt.api", "BeforeAfter": "ptxopt.api",
    "parse": "ptxopt.ptx.parser", "parse_bytes": "ptxopt.ptx.parser", "parse_file": "ptxopt.ptx.parser",
    "ParseError": "ptxopt.ptx.parser",
}
# ``import ptxopt`` then ``ptxopt.passes.passmanager`` / ``ptxopt.passes.pipeline`` work; they stay internal.
_SUBMODULES = ("passmanager", "pipeline")


def __getattr__(name: str):
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
    elif name in _SUBMODULES:
        value = importlib.import_module(f"ptxopt.{name}")
    else:
        raise AttributeError(f"module 'ptxopt' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY) | set(_SUBMODULES))


__version__ = "0.1.0"
__all__ = ["optimize", "OptimizeResult", "BeforeAfter", "parse", "parse_bytes", "parse_file", "emit",
           "ParseError", "__version__"]
