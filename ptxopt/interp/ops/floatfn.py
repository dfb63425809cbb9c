"""Floating-point functions: rcp sqrt rsqrt sin cos lg2 ex2 tanh, and testp.

Correctly rounded forms (``rcp.rn``, ``sqrt.rn``, any ``.f64`` but
``.approx``) are exact. The ``.approx`` forms are the GPU's special function
unit, which PTX specifies only to within a stated error
(:data:`ptxopt.ptx.opcodes.APPROXIMATE_FLOAT_OPS`); here they are float64
evaluations rounded to nearest (:data:`ptxopt.interp.fp.APPROX`) with a
modelled error of up to one ulp keyed by the form and the inputs
(:func:`ptxopt.interp.fp.model_error`): the same form on the same inputs
gives the same bits, a changed form does not.
"""

from __future__ import annotations

import numpy as np

from ptxopt.ptx import opcodes
from ptxopt.interp import fp
from ptxopt.interp.ops.op_helpers import elementwise, one_type, packed, rounding


def _flags(ins, types):
    return set(m for m in ins.modifiers if m not in types)


def c_unary(ins, d, fn: str):
    types = d.mods({"approx", "rn", "rz", "rm", "rp", "ftz", "full"})
    t = one_type(d, types)
    flags = _flags(ins, types)
    ftz = "ftz" in flags
    approx = "approx" in flags
    key = fp.form_key(opcodes.precision_form(ins)) if approx else 0
    if t == "f32":
        if approx or fn in ("sin", "cos", "lg2", "ex2", "tanh", "rsqrt"):
            if not approx:
                raise d.unsupported(f"{fn}.f32 needs .approx")
            return elementwise(d, ins, t, (t,), lambda a: fp.approx_f32(fn, a, ftz, key))
        mode = rounding(ins)
        if fn == "rcp":
            one = np.ones(1, dtype=np.float32)
            return elementwise(d, ins, t, (t,), lambda a: fp.div_f32(one, a, mode, ftz))
        if fn == "sqrt":
            return elementwise(d, ins, t, (t,), lambda a: fp.sqrt_f32(a, mode, ftz))
        raise d.unsupported()
    if t == "f64":
        if approx:
            if fn not in ("rcp", "rsqrt", "sqrt"):
                raise d.unsupported()

            def ap(a):
                with np.errstate(all="ignore"):
                    x = fp.flush(a, "f64") if ftz else a
                    return fp.canon(fp.model_error(key, fp.APPROX[fn](x), x), "f64")

            return elementwise(d, ins, t, (t,), ap)
        mode = rounding(ins)
        if fn == "rcp":
            one = np.ones(1)
            return elementwise(d, ins, t, (t,), lambda a: fp.f64_op("div", (one, a), mode))
        if fn == "sqrt":
            return elementwise(d, ins, t, (t,), lambda a: fp.f64_op("sqrt", (a,), mode))
        raise d.unsupported()
    if t in ("f16", "f16x2", "bf16", "bf16x2") and approx and fn in ("ex2", "tanh"):
        fmt = "f16" if t.startswith("f16") else "bf16"

        def lane(x):
            with np.errstate(all="ignore"):
                v = fp.from_bits16(x, fmt)
                return fp.model_error(key, fp.to_bits16(fp.APPROX[fn](v), fmt, ftz=ftz), x, fmt=fmt)

        f = packed(lane) if t.endswith("x2") else lane
        bt = "b32" if t.endswith("x2") else "b16"
        return elementwise(d, ins, bt, (bt,), f)
    raise d.unsupported(f"{fn}.{t}")


TESTP = {
    "finite": np.isfinite,
    "infinite": np.isinf,
    "number": lambda x: ~np.isnan(x),
    "notanumber": np.isnan,
}


def c_testp(ins, d):
    types = d.mods(set(TESTP) | {"normal", "subnormal"})
    t = one_type(d, types)
    if t not in ("f32", "f64"):
        raise d.unsupported()
    which = [m for m in ins.modifiers if m not in types]
    if len(which) != 1:
        raise d.unsupported()
    w = which[0]
    tiny = np.ldexp(1.0, fp.FORMATS[t][1])
    if w == "normal":
        fn = lambda x: np.isfinite(x) & (np.abs(x) >= tiny)  # noqa: E731
    elif w == "subnormal":
        fn = lambda x: (np.abs(x) < tiny) & (x != 0)  # noqa: E731
    else:
        fn = TESTP[w]
    return elementwise(d, ins, "pred", (t,), fn)


OPS = {
    "rcp": lambda i, d: c_unary(i, d, "rcp"),
    "sqrt": lambda i, d: c_unary(i, d, "sqrt"),
    "rsqrt": lambda i, d: c_unary(i, d, "rsqrt"),
    "sin": lambda i, d: c_unary(i, d, "sin"),
    "cos": lambda i, d: c_unary(i, d, "cos"),
    "lg2": lambda i, d: c_unary(i, d, "lg2"),
    "ex2": lambda i, d: c_unary(i, d, "ex2"),
    "tanh": lambda i, d: c_unary(i, d, "tanh"),
    "testp": c_testp,
}
