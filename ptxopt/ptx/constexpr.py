"""Evaluating PTX constant expressions (PTX ISA "Constant Expressions").

The module grammar only *recognises* expressions such as ``(1+2)*3``,
``1<<4`` or ``[%rd1+4*2]`` as a flat run of operands and operators, and the
IR keeps their text verbatim (lossless printing). Their value is needed only
for address offsets and by the interpreter, so it is computed here, by a
small LALR grammar with C's precedence levels.

Semantics follow the ISA: integers are 64-bit (signed unless cast with
``(.u64)`` or written with a ``U`` suffix), ``/`` truncates toward zero, ``%``
takes the dividend's sign, comparisons and logical operators give 0 or 1, and
any floating-point operand makes the arithmetic double precision.
"""

from __future__ import annotations

import math
import re
from functools import lru_cache

from lark import Lark, Transformer, v_args
from lark.exceptions import LarkError, VisitError

from ptxopt.ptx.ptxwords import GRAMMAR_PATH, literal_value

_GRAMMAR = r"""
?start: ternary
?ternary: lor | lor "?" ternary ":" ternary -> cond
?lor: land | lor "||" land -> lor_
?land: bor | land "&&" bor -> land_
?bor: bxor | bor "|" bxor -> bor_
?bxor: band | bxor "^" band -> bxor_
?band: eq | band "&" eq -> band_
?eq: rel | eq "==" rel -> eq_ | eq "!=" rel -> ne_
?rel: shift | rel "<" shift -> lt_ | rel ">" shift -> gt_ | rel "<=" shift -> le_ | rel ">=" shift -> ge_
?shift: add | shift "<<" add -> shl_ | shift ">>" add -> shr_
?add: mul | add "+" mul -> add_ | add "-" mul -> sub_
?mul: unary | mul "*" unary -> mul_ | mul "/" unary -> div_ | mul "%" unary -> mod_
?unary: atom | "-" unary -> neg_ | "+" unary | "!" unary -> not_ | "~" unary -> inv_
      | "(" CAST ")" unary -> cast_
?atom: NUMBER -> num | "(" ternary ")"
CAST: /\.[su]64/
NUMBER: /%NUMBER%/
%ignore /\s+/
"""

_MASK = (1 << 64) - 1


def _wrap_signed(v: int) -> int:
    v &= _MASK
    return v - (1 << 64) if v >> 63 else v


@v_args(inline=True)
class _Eval(Transformer):
    def num(self, tok):
        v = literal_value(str(tok))
        return v

    def _ints(self, a, b):
        return not isinstance(a, float) and not isinstance(b, float)

    def add_(self, a, b): return a + b
    def sub_(self, a, b): return a - b
    def mul_(self, a, b): return a * b

    def div_(self, a, b):
        if self._ints(a, b):
            if b == 0:
                raise ZeroDivisionError("division by zero in constant expression")
            q = abs(a) // abs(b)
            return q if (a >= 0) == (b >= 0) else -q
        return a / b

    def mod_(self, a, b):
        if not self._ints(a, b):
            raise ValueError("% needs integer operands")
        if b == 0:
            raise ZeroDivisionError("modulo by zero in constant expression")
        return int(math.fmod(a, b))

    def shl_(self, a, b): return _wrap_signed(int(a) << int(b))
    def shr_(self, a, b): return int(a) >> int(b)
    def lt_(self, a, b): return int(a < b)
    def gt_(self, a, b): return int(a > b)
    def le_(self, a, b): return int(a <= b)
    def ge_(self, a, b): return int(a >= b)
    def eq_(self, a, b): return int(a == b)
    def ne_(self, a, b): return int(a != b)
    def band_(self, a, b): return int(a) & int(b)
    def bxor_(self, a, b): return int(a) ^ int(b)
    def bor_(self, a, b): return int(a) | int(b)
    def land_(self, a, b): return int(bool(a) and bool(b))
    def lor_(self, a, b): return int(bool(a) or bool(b))
    def cond(self, c, a, b): return a if c else b
    def neg_(self, a): return -a
    def not_(self, a): return int(not a)
    def inv_(self, a): return ~int(a)

    def cast_(self, cast, a):
        v = int(a) & _MASK
        return v if str(cast) == ".u64" else _wrap_signed(v)


@lru_cache(maxsize=1)
def _parser() -> Lark:
    # The literal syntax is the module grammar's own NUMBER terminal.
    number = re.search(r"^NUMBER: /(.*)/$", GRAMMAR_PATH.read_text(), re.M).group(1)
    return Lark(_GRAMMAR.replace("%NUMBER%", number), parser="lalr")


class ConstExprError(ValueError):
    pass


@lru_cache(maxsize=4096)
def evaluate(text: str) -> int | float:
    """The value of a constant expression; integers wrap to signed 64 bits."""
    try:
        v = _Eval().transform(_parser().parse(text))
    except VisitError as e:  # raised inside an operator: report the operator's reason
        raise ConstExprError(f"cannot evaluate constant expression {text!r}: {e.orig_exc}") from None
    except RecursionError:
        raise ConstExprError(f"constant expression nested too deeply: {text[:40]!r}...") from None
    except (LarkError, ZeroDivisionError, ValueError) as e:
        raise ConstExprError(f"cannot evaluate constant expression {text!r}: {e}") from None
    return v if isinstance(v, float) else _wrap_signed(int(v))
