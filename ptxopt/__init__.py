"""ptxopt: rewrite NVIDIA PTX kernels with legality-checked passes.

The front end is lossless: ``parse(emit(m)) == m``, and ptxas compiles the
emitted text to the same SASS as the input. Library use::

    from ptxopt import parse, emit
    m = parse(ptx_text, "kernel.ptx")
    ptx_again = emit(m)
"""

from ptxopt.emit import emit
from ptxopt.parser import ParseError, parse, parse_bytes, parse_file

__version__ = "0.1.0"
__all__ = ["parse", "parse_bytes", "parse_file", "emit", "ParseError", "__version__"]
