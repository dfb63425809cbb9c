"""Drive NVIDIA's ptxas and nvdisasm from the pip-installed CUDA wheels.

This package is ptxopt's only door to NVIDIA's tools:

* :func:`compile_ptx` -- PTX text -> cubin plus the ``ptxas -v`` resource
  report (registers, spills, stack, shared memory) per kernel;
* :func:`disassemble` / :func:`sass_text` -- cubin -> parsed Volta+ SASS with
  decoded scheduling bits, or a normalised listing for SASS-equality checks;
* :func:`select_ptxas` / :func:`find_nvdisasm` -- which binaries are used
  (the oldest ptxas that accepts the module's ``.version``; never a system
  CUDA install, see :mod:`ptxopt.toolchain.locate`);
* :func:`toolchain_versions` -- tool versions, for cache keys.

Expected failures (missing wheels, PTX that does not assemble, timeouts) are
:class:`ToolchainError` subclasses with messages fit to show a user.
"""

from __future__ import annotations

from ptxopt.toolchain.control_bits import Control
from .errors import (
    Diagnostic,
    NvdisasmError,
    PtxasError,
    ToolchainError,
    ToolchainTimeout,
    ToolCrashed,
    ToolNotFound,
    UnsupportedArch,
    UnsupportedPTXVersion,
    is_transient,
)
from .locate import Ptxas, Tool, find_nvdisasm, installed_ptxas, select_ptxas
from .ptxas import CompileResult, KernelResources, compile_ptx, ptx_isa_version
from .sass import SassInstruction, SassListing, disassemble, sass_text

__all__ = [
    "compile_ptx",
    "disassemble",
    "sass_text",
    "select_ptxas",
    "find_nvdisasm",
    "installed_ptxas",
    "ptx_isa_version",
    "toolchain_versions",
    "CompileResult",
    "KernelResources",
    "SassInstruction",
    "SassListing",
    "Control",
    "Diagnostic",
    "Ptxas",
    "Tool",
    "ToolchainError",
    "ToolNotFound",
    "PtxasError",
    "NvdisasmError",
    "ToolchainTimeout",
    "ToolCrashed",
    "is_transient",
    "UnsupportedPTXVersion",
    "UnsupportedArch",
]


def toolchain_versions() -> dict[str, object]:
    """Versions of every tool that can influence results, for cache keys.

    ``{"ptxas": {"12.9": "12.9.86", "13.5": "13.5.37"}, "nvdisasm": "13.5.37"}``
    -- keyed by CUDA release so a cache entry can name the ptxas it used.
    """
    from .ptxas import default_flags

    out: dict[str, object] = {
        "ptxas": {t.version: t.full_version for t in installed_ptxas()},
        "nvdisasm": find_nvdisasm().full_version,
    }
    flags = default_flags()
    if flags:  # PTXOPT_PTXAS_FLAGS: another SASS, another key (absent otherwise: existing keys stay)
        out["ptxas_flags"] = list(flags)
    return out
