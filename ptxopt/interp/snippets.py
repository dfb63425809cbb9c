"""Small kernels built from snippets, for testing instruction semantics.

``elementwise("fma.rn.f32 %d, %a, %b, %c;", {"a": ("f32", A), ...}, {"d": "f32"})``
runs the instruction once per element (one thread each) and returns the
outputs, so a test can check exact bit patterns for many operand values at
once; ``module(body, params)`` wraps a hand-written body into a module with
the usual register sets declared. The same text can be run on a GPU to check
the interpreter against hardware.
"""

from __future__ import annotations

import numpy as np

from ptxopt.interp.launcher import run_kernel
from ptxopt.interp.workload import np_dtype
from ptxopt.ptx.parser import parse

HEADER = ".version 8.8\n.target sm_89\n.address_size 64\n"

STANDARD_REGS = """\
\t.reg .pred %p<32>;
\t.reg .b16 %rs<32>;
\t.reg .b32 %r<64>;
\t.reg .f32 %f<64>;
\t.reg .b64 %rd<64>;
\t.reg .f64 %fd<32>;
"""


def module(body: str, params: str = "", name: str = "k", extra: str = "", regs: str = STANDARD_REGS):
    """Parse ``.entry name(params) { regs body }`` (``extra``: module-level text)."""
    text = f"{HEADER}{extra}\n.visible .entry {name}({params})\n{{\n{regs}{body}\n}}\n"
    return parse(text, "<probe>")


def _reg_type(t: str) -> str:
    return {"f16": "b16", "bf16": "b16", "pred": "pred", "f16x2": "b32", "bf16x2": "b32"}.get(t, t)


def _mem_type(t: str) -> str:
    return {"f16": "b16", "bf16": "b16", "pred": "u8", "f16x2": "b32", "bf16x2": "b32"}.get(t, t)


def _size(t: str) -> int:
    return 1 if t == "pred" else np_dtype(t).itemsize if t not in ("f16x2", "bf16x2") else 4


def elementwise(op: str, inputs: dict, outputs: dict, *, threads: int | None = None):
    """Run ``op`` (PTX text using ``%name`` registers) once per element.

    ``inputs``: ``{name: (ptx_type, array)}``; ``outputs``: ``{name: ptx_type}``.
    Returns ``{name: array}`` (predicates as bool).
    """
    n = threads or max(len(np.atleast_1d(a)) for _, a in inputs.values())
    if n > 1024:
        raise ValueError("at most 1024 elements")
    params, regs, loads, stores, args = [], [], [], [], []
    regs.append("\t.reg .b32 %tid_;\n\t.reg .b64 %ptr_, %off_;\n\t.reg .pred %pp_;\n"
                "\t.reg .b16 %tmp16_;\n")
    loads.append("\tmov.u32 %tid_, %tid.x;\n")
    for name, (t, arr) in inputs.items():
        arr = np.broadcast_to(np.asarray(arr, dtype=np.uint8 if t == "pred" else np_dtype(t)
                                         if t not in ("f16x2", "bf16x2") else np.uint32), (n,))
        params.append(f".param .u64 in_{name}")
        regs.append(f"\t.reg .{_reg_type(t)} %{name};\n")
        sz = _size(t)
        loads.append(f"\tld.param.u64 %ptr_, [in_{name}];\n\tmul.wide.u32 %off_, %tid_, {sz};\n"
                     f"\tadd.s64 %ptr_, %ptr_, %off_;\n")
        if t == "pred":
            loads.append(f"\tld.global.u8 %tmp16_, [%ptr_];\n\tsetp.ne.u16 %{name}, %tmp16_, 0;\n")
        else:
            loads.append(f"\tld.global.{_mem_type(t)} %{name}, [%ptr_];\n")
        args.append(np.ascontiguousarray(arr))
    for name, t in outputs.items():
        params.append(f".param .u64 out_{name}")
        if name not in inputs:
            regs.append(f"\t.reg .{_reg_type(t)} %{name};\n")
        sz = _size(t)
        stores.append(f"\tld.param.u64 %ptr_, [out_{name}];\n\tmul.wide.u32 %off_, %tid_, {sz};\n"
                      f"\tadd.s64 %ptr_, %ptr_, %off_;\n")
        if t == "pred":
            stores.append(f"\tselp.u16 %tmp16_, 1, 0, %{name};\n\tst.global.u8 [%ptr_], %tmp16_;\n")
        else:
            stores.append(f"\tst.global.{_mem_type(t)} [%ptr_], %{name};\n")
        dt = np.uint8 if t == "pred" else np.uint32 if t in ("f16x2", "bf16x2") else np_dtype(t)
        args.append(np.zeros(n, dtype=dt))
    body = "".join(regs) + "".join(loads) + "\t" + op.strip() + "\n" + "".join(stores) + "\tret;"
    m = module(body, ",\n\t".join(params), regs="")
    res = run_kernel(m, "k", 1, n, args)
    out = {}
    base = len(inputs)
    for i, (name, t) in enumerate(outputs.items()):
        v = res.buffers[base + i]
        out[name] = v.astype(bool) if t == "pred" else v
    return out


def bits(x, t: str = "f32") -> np.ndarray:
    """The bit patterns of float values (for exact comparisons)."""
    return np.asarray(x, dtype=np_dtype(t)).view(np.uint32 if t == "f32" else np.uint64 if t == "f64"
                                                 else np.uint16)
