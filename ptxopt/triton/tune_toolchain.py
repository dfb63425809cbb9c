"""Tune a Triton cache with the ptxas the hook will run: Triton's binary and flags.

The hook checks and judges a tuned pipeline with the ptxas command Triton's
``cubin`` stage runs (:func:`ptxopt.triton.triton_ptxas.triton_ptxas_command`: its
bundled binary, ``-lineinfo``, ``--regAllocOptLevel=2``, the kernel's
``ptx_options`` ...). Tuning with ptxopt's own ptxas and no flags judges
another SASS: a pipeline can gain when tuned and nothing in the hook. So
``ptxopt search TRITON_CACHE`` rebuilds, per kernel, the command the hook
would run -- from the kernel's metadata (architecture, FP fusion,
``ptx_options``) and this process's Triton knobs, the same reading the hook
makes -- and runs the whole search with it (``PTXOPT_PTXAS`` and
``PTXOPT_PTXAS_FLAGS``, which spawned workers inherit). The pipelines file
records it per kernel (``toolchain``); the hook compares it with its own
command and says "same ptxas and flags" or reports the mismatch.
"""

from __future__ import annotations

import os
import shlex
from contextlib import contextmanager
from dataclasses import dataclass

from ptxopt.toolchain.ptxas import FLAGS_ENV

#: the metadata fields that change Triton's ptxas command line; the rest take Triton's defaults
_OPTION_FIELDS = ("num_warps", "num_ctas", "enable_fp_fusion", "ptx_options", "instrumentation_mode", "debug",
                  "sanitize_overflow")


@dataclass(frozen=True)
class Toolchain:
    """One ptxas command: the binary, its version and the flags (``-arch``, ``-v`` and files excepted)."""

    ptxas: str
    version: str
    flags: tuple[str, ...]

    def record(self) -> dict:
        """As the pipelines file keeps it."""
        return {"ptxas": self.ptxas, "version": self.version, "flags": list(self.flags)}

    def words(self) -> str:
        return f"ptxas {self.version} {' '.join(self.flags) or '(no flags)'}"


def toolchain_of(ptxas: str, flags) -> Toolchain:
    from ptxopt.toolchain.locate import identify_ptxas

    return Toolchain(str(ptxas), identify_ptxas(ptxas).full_version, tuple(flags))


def from_record(doc) -> Toolchain | None:
    """A pipelines file's ``toolchain`` entry (None: not recorded, or malformed)."""
    if not isinstance(doc, dict) or not isinstance(doc.get("ptxas"), str) or not isinstance(doc.get("flags"), list):
        return None
    return Toolchain(doc["ptxas"], str(doc.get("version") or ""), tuple(str(f) for f in doc["flags"]))


def for_metadata(metadata: dict) -> Toolchain:
    """The ptxas command Triton's ``cubin`` stage runs for a kernel with this
    metadata, under this process's Triton knobs. ImportError without Triton."""
    from triton.backends.compiler import GPUTarget
    from triton.backends.nvidia.compiler import CUDABackend

    from ptxopt.triton.triton_ptxas import triton_ptxas_command

    target = metadata.get("target") or {}
    if not isinstance(target, dict):  # a CompiledKernel's metadata holds a GPUTarget
        target = {"arch": target.arch, "warp_size": target.warp_size}
    backend = CUDABackend(GPUTarget("cuda", int(target.get("arch", 89)), int(target.get("warp_size", 32))))
    options = backend.parse_options({k: metadata[k] for k in _OPTION_FIELDS if metadata.get(k) is not None})
    path, flags = triton_ptxas_command(backend, options)
    return toolchain_of(path, flags)


def mismatch(tuned: Toolchain | None, hook: Toolchain) -> str:
    """"" when tuning used the hook's ptxas (same version) and flags, else one line saying what differs."""
    if tuned is None:
        return ("the pipelines file does not record the ptxas tuning used (written before it did): "
                f"judged again with Triton's {hook.words()}")
    if (tuned.version, tuned.flags) == (hook.version, hook.flags):
        return ""
    return (f"tuned with {tuned.words()}, this compile runs Triton's {hook.words()}: the tuned gain was "
            "estimated on other SASS (judged again; tune again to match)")


@contextmanager
def tuning_with(toolchain: Toolchain | None):
    """Every default ptxas run inside (this process and the workers it spawns) is ``toolchain``'s."""
    if toolchain is None:
        yield
        return
    keep = {k: os.environ.get(k) for k in ("PTXOPT_PTXAS", FLAGS_ENV)}
    os.environ["PTXOPT_PTXAS"] = toolchain.ptxas
    os.environ[FLAGS_ENV] = shlex.join(toolchain.flags)
    try:
        yield
    finally:
        for k, v in keep.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def choose(kernels) -> tuple[Toolchain | None, dict, str]:
    """``(toolchain, {label: Toolchain}, note)`` for the cache's kernels
    (:class:`~ptxopt.triton.cache_dir.CachedKernel`): the one command every
    kernel's compile would run; None with a note when Triton cannot be
    imported (tuned with ptxopt's ptxas: the hook will report the mismatch).
    ValueError when the kernels need different commands (one search runs one)."""
    try:
        import triton  # noqa: F401
    except ImportError:
        return None, {}, ("Triton is not importable here: tuning with ptxopt's own ptxas, not the one the hook "
                          "runs (the hook will report the mismatch); install ptxopt[triton] to tune with Triton's")
    by_label = {k.label: for_metadata(k.metadata) for k in kernels}
    distinct = sorted(set(by_label.values()), key=lambda t: (t.ptxas, t.flags))
    if len(distinct) > 1:
        lines = "; ".join(f"{lab}: {t.ptxas} {' '.join(t.flags)}" for lab, t in sorted(by_label.items()))
        raise ValueError(f"the kernels of this cache compile with different ptxas commands ({lines}): "
                         "search them separately (--kernel NAME)")
    if not distinct:
        return None, {}, ""
    return distinct[0], by_label, f"tuning with Triton's {distinct[0].words()} ({distinct[0].ptxas}), as the hook runs it"


__all__ = ["Toolchain", "choose", "for_metadata", "from_record", "mismatch", "toolchain_of", "tuning_with"]
