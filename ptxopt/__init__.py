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

from ptxopt.api import BeforeAfter, OptimizeResult, optimize
from ptxopt.emit import emit
from ptxopt.parser import ParseError, parse, parse_bytes, parse_file

# ``import ptxopt`` then ``ptxopt.passmanager`` / ``ptxopt.pipeline`` work
# (the api imports them); they stay internal.
from ptxopt import passmanager, pipeline  # noqa: E402,F401  isort: skip

__version__ = "0.1.0"
__all__ = ["optimize", "OptimizeResult", "BeforeAfter", "parse", "parse_bytes", "parse_file", "emit",
           "ParseError", "__version__"]
