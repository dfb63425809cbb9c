"""Compile the corpus's Triton kernels (``corpus/triton/*.py``) for real.

For tests and benchmarks of :mod:`ptxopt.triton`: each kernel is compiled by
``triton.compile`` for a fixed ``GPUTarget("cuda", 89, 32)`` -- no GPU is
needed -- with the signature, constexprs, ``num_warps`` and the JIT's
16-divisibility specialisation its ``CORPUS`` entry declares (the same
recipe as ``corpus/regenerate.py``), so every stage, the stage hook
included, runs exactly as under ``@triton.jit``. Needs ``triton`` (the
``triton`` extra); nothing here imports it at module level.
"""

from __future__ import annotations

import importlib.util
from functools import lru_cache
from pathlib import Path

from ptxopt.kernels.corpus import corpus_file

CORPUS_TRITON = corpus_file("triton")
SM = 89

_PTR = {"f32": "*fp32", "f16": "*fp16", "bf16": "*bf16", "s32": "*i32", "u32": "*u32",
        "s64": "*i64", "u8": "*u8", "s8": "*i8"}
_SCALAR = {"f32": "fp32", "s32": "i32", "u32": "u32", "s64": "i64"}


@lru_cache(maxsize=None)
def specs() -> dict[str, dict]:
    """Kernel name -> its ``CORPUS`` entry (with ``"py"``: the source file)."""
    return load_specs(*sorted(CORPUS_TRITON.glob("*.py")))


def load_specs(*files) -> dict[str, dict]:
    """Kernel name -> ``CORPUS`` entry of each Python file given (a user's kernels written in the
    corpus's form, e.g. ``benchmarks/outside_kernels/triton_user.py``)."""
    out = {}
    for py in map(Path, files):
        spec = importlib.util.spec_from_file_location(f"ptxopt_corpus_triton_{py.stem}", py)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        for entry in module.CORPUS:
            out[entry["name"]] = {**entry, "py": py}
    return out


def source(name: str | dict, *, constexprs: dict | None = None):
    """``(ASTSource, options)`` for corpus kernel ``name`` (or a ``CORPUS`` entry itself);
    ``constexprs`` overrides some of its constexprs (another specialisation)."""
    from triton.compiler import ASTSource

    spec = specs()[name] if isinstance(name, str) else name
    fn = spec["kernel"]
    consts = {**spec.get("constexprs", {}), **(constexprs or {})}
    signature, attrs = {}, {}
    for arg, role, dtype, amount, *_ in spec["params"]:
        is_ptr = role != "scalar"
        signature[arg] = (_PTR if is_ptr else _SCALAR)[dtype]
        if spec.get("divisibility", True) and (is_ptr or (isinstance(amount, int) and amount % 16 == 0)):
            attrs[(fn.arg_names.index(arg),)] = [["tt.divisibility", 16]]
    for arg in consts:
        signature[arg] = "constexpr"
    signature = {a: signature[a] for a in fn.arg_names}
    options = {"num_warps": spec.get("num_warps", 4), "num_stages": spec.get("num_stages", 3)}
    return ASTSource(fn, signature=signature, constexprs=consts, attrs=attrs), options


def compile_kernel(name: str | dict, *, constexprs: dict | None = None, options: dict | None = None):
    """``triton.compile`` corpus kernel ``name`` (or a ``CORPUS`` entry) for sm_89; the CompiledKernel."""
    import triton
    from triton.backends.compiler import GPUTarget

    src, opts = source(name, constexprs=constexprs)
    return triton.compile(src, target=GPUTarget("cuda", SM, 32), options={**opts, **(options or {})})


__all__ = ["CORPUS_TRITON", "specs", "load_specs", "source", "compile_kernel"]
