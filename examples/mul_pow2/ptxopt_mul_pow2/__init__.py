"""An example ptxopt pass from outside ptxopt: ``mul_pow2``.

Strength reduction: ``mul.lo.{s,u,b}{32,64} d, a, 2^k`` becomes
``shl.b{32,64} d, a, k``. Exact: the low half of ``a * 2^k`` is ``a``
shifted left by ``k`` modulo ``2^width`` for signed and unsigned ``a`` alike.

Installed, the package declares the pass in the ``ptxopt.passes`` entry-point
group (``pyproject.toml``), so ``ptxopt run -p mul_pow2``,
``optimize(src, "mul_pow2,maxnreg_128")`` and every other pipeline string
find it; without installing, ``ptxopt.passes.register(MulPow2)`` does the same.
"""

from ptxopt_mul_pow2.mul_pow2 import MulPow2

__all__ = ["MulPow2"]
