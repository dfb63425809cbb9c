"""Check PTX with the ptxas Triton itself will run: its binary and flags.

Triton's ``cubin`` stage runs its bundled ptxas (``knobs.nvidia.ptxas``, or
``ptxas-blackwell`` from sm_90 on) with ``-lineinfo`` (or ``-g``, or none,
per its knobs), ``--fmad=false`` when FP fusion is off, ``--opt-level 0``
when ptxas optimisation is disabled, ``--regAllocOptLevel=2``, the kernel's
``ptx_options``, and ``--opt-level 1`` for sanitizer builds. A rewrite
accepted by a different ptxas could still make Triton's fail -- and Triton
then prints the whole module and asks for a Triton bug report -- so the hook
checks with the same command line, here rebuilt from the same knobs (Triton
3.9).
"""

from __future__ import annotations

from typing import Callable


def triton_ptxas_command(backend, options) -> tuple[str, list[str]]:
    """``(ptxas path, flags)`` of Triton's ``make_cubin`` for this compile
    (the ``--gpu-name``/``-arch``, ``-v`` and file arguments excepted)."""
    from triton import knobs
    from triton.backends.nvidia.compiler import get_ptxas

    path = get_ptxas(backend.target.arch).path
    flags: list[str] = []
    if knobs.compilation.disable_line_info:
        flags += ["-lineinfo", "-suppress-debug-info"]
    elif knobs.nvidia.disable_ptxas_opt:
        flags += ["-g"]
    else:
        flags += ["-lineinfo"]
    if not options.enable_fp_fusion:
        flags += ["--fmad=false"]
    if knobs.nvidia.disable_ptxas_opt:
        flags += ["--opt-level", "0"]
    flags += ["--regAllocOptLevel=2"]
    if options.ptx_options:
        flags += options.ptx_options.split(" ")
    try:  # 3.9: sanitizer builds (consan/fpsan) get -O1 unless ptxas optimisation is off
        from triton._instrumentation import is_enabled
    except ImportError:  # pragma: no cover - another Triton
        is_enabled = None
    if is_enabled is not None and not knobs.nvidia.disable_ptxas_opt \
            and any(is_enabled(options, mode) for mode in ("consan", "fpsan")):
        flags += ["--opt-level", "1"]
    return path, flags


def triton_compile(backend, options) -> Callable:
    """A ``compile(ptx, arch)`` for :func:`ptxopt.optimize` that runs
    Triton's ptxas with Triton's flags."""
    from ptxopt.toolchain import compile_ptx

    path, flags = triton_ptxas_command(backend, options)

    def run(ptx: str, arch: str):
        return compile_ptx(ptx, arch, ptxas=path, extra_args=flags)

    run.ptxas = path  # type: ignore[attr-defined]
    run.flags = flags  # type: ignore[attr-defined]
    return run


__all__ = ["triton_ptxas_command", "triton_compile"]
