"""The GPU harness's inputs, built exactly as the CPU verifier builds them (no CuPy).

A GPU measurement is only comparable with the interpreter's verdict when
both run the kernel on the same bytes: :func:`host_args` takes
:func:`ptxopt.interp.workload.make_args` unchanged and encodes scalars with
the interpreter's own encoder; :func:`clock_buffer` is the extra duration
buffer the instrumented kernel writes.
"""

from __future__ import annotations

import numpy as np

from ptxopt.gpu.errors import HarnessError
from ptxopt.gpu.clock_instrument import SENTINEL

_SCALAR_DTYPES = {"f16": "<f2", "f32": "<f4", "f64": "<f8"}


def scalar_dtype(ptx_type: str) -> np.dtype:
    """numpy dtype whose bytes are a ``.param`` of PTX type ``ptx_type``."""
    if ptx_type in _SCALAR_DTYPES:
        return np.dtype(_SCALAR_DTYPES[ptx_type])
    kind, bits = ptx_type[:1], ptx_type[1:]
    if kind in ("u", "s", "b") and bits in ("8", "16", "32", "64"):
        return np.dtype(f"<{'i' if kind == 's' else 'u'}{int(bits) // 8}")
    raise HarnessError("error", f"cannot pass a scalar of PTX type .{ptx_type}")


def typed_scalar(value, ptx_type: str, size: int) -> np.generic:
    """``value`` as a numpy scalar with exactly the bytes the interpreter
    would put in the parameter block (:func:`ptxopt.interp.launcher.encode_scalar`)."""
    from ptxopt.interp.launcher import encode_scalar

    dt = scalar_dtype(ptx_type)
    if dt.itemsize != size:
        raise HarnessError("error", f"parameter of type .{ptx_type} has {size} bytes")
    return np.frombuffer(encode_scalar(value, ptx_type, size), dtype=dt)[0]


def kernel_params(ptx_text: str, entry: str):
    """Parameter slots (name, offset, size, PTX type, is-pointer) of ``entry``."""
    from ptxopt.interp.program import Program
    from ptxopt.ptx.parser import parse

    return Program(parse(ptx_text, "<candidate>")).kernel_params(entry)


def host_args(spec, slots, seed: int = 0, flavour: str = "random") -> list:
    """Host-side arguments for ``spec`` (a corpus ``KernelSpec``): the arrays
    of :func:`ptxopt.interp.workload.make_args` unchanged, ``None`` for null
    pointers, and scalars as numpy scalars of the parameter's PTX type."""
    from ptxopt.interp.workload import make_args

    if len(slots) != len(spec.params):
        raise HarnessError("error", f"{spec.entry} has {len(slots)} parameters but the manifest entry "
                           f"describes {len(spec.params)}")
    out = []
    for p, slot, a in zip(spec.params, slots, make_args(spec, seed, flavour)):
        if isinstance(a, np.ndarray):
            if slot.size != 8:
                raise HarnessError("error", f"buffer argument {p.arg} for the {slot.size}-byte parameter {slot.name}")
            out.append(a)
        elif a is None:
            out.append(None)
        else:
            out.append(typed_scalar(a, slot.dtype, slot.size))
    return out


def clock_buffer(threads: int, rows: int | None = None) -> np.ndarray:
    """The duration buffer, pre-filled with the sentinel: ``(threads,)`` or
    ``(rows, threads)`` uint64."""
    shape = (threads,) if rows is None else (rows, threads)
    return np.full(shape, SENTINEL, dtype=np.uint64)


__all__ = ["scalar_dtype", "typed_scalar", "kernel_params", "host_args", "clock_buffer"]
