"""ptxopt: rewrite NVIDIA PTX kernels with legality-checked passes.

The front end (``parse``/``emit``) is lossless: ``parse(emit(m)) == m`` and
ptxas compiles the emitted text to the same SASS as the input.
"""

__version__ = "0.1.0"
