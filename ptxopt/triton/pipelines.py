"""The results file of offline tuning: kernel (name, source hash) -> pipeline.

``ptxopt search`` over a Triton cache directory finds the best verified
pipeline per kernel; this file carries that to the next compile, where
``ptxopt.triton.enable(pipelines=FILE)`` applies exactly those pipelines.

A kernel is keyed by its entry name and the **source hash**: the SHA-256 of
the PTX Triton produced for it (ptxopt's input). A kernel whose source
changed since tuning -- new Triton, new code, other constexprs or
``num_warps`` -- has another hash and is left alone: the pipeline was
chosen, and verified, for the old text. Format (JSON)::

    {"format": "ptxopt-triton-pipelines/1", "ptxopt": "0.1.0",
     "kernels": [{"name": "add_kernel", "source_hash": "9f2c...",
                  "pipeline": "vec_ld,maxnreg_128", "verdict": "equal",
                  "baseline_cycles": 812.0, "best_cycles": 640.0,
                  "cycles_kind": "estimate", "arch": "sm_89", "path": "...",
                  "objective": "throughput", "launch": "block (128, 1, 1), ...",
                  "toolchain": {"ptxas": ".../triton/backends/nvidia/bin/ptxas",
                                "version": "12.9.86", "flags": ["-lineinfo", "--regAllocOptLevel=2"]}}]}

``pipeline`` ``""`` records that nothing helped (the kernel is left as is).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ptxopt.support import jsontext

if TYPE_CHECKING:
    from ptxopt.passes.pipeline import Pipeline

FORMAT = "ptxopt-triton-pipelines/1"


class PipelinesError(ValueError):
    """A results file that cannot be read or is malformed."""


def source_hash(ptx: str) -> str:
    """The key of a kernel's source: SHA-256 of Triton's PTX text."""
    return hashlib.sha256(ptx.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class TunedKernel:
    name: str
    source_hash: str
    pipeline: str
    verdict: str = ""
    baseline_cycles: float | None = None
    best_cycles: float | None = None
    cycles_kind: str = ""  # "estimate" (sim) or "measurement" (gpu)
    arch: str = ""
    path: str = ""
    #: what tuning optimised (``latency`` / ``throughput``) and, for throughput, the performance launch
    #: in words: the hook judges this kernel's pipeline under the same ("" in files written before)
    objective: str = ""
    launch: str = ""
    #: the ptxas command tuning compiled with (:mod:`ptxopt.triton.tune_toolchain`): ``{"ptxas": path,
    #: "version": ..., "flags": [...]}``, Triton's own for the hook to match ({} in files written before)
    toolchain: dict = field(default_factory=dict)
    #: the check launch tuning estimated under (its loop trip counts), in words: the hook tries this
    #: alternative of Triton's contracts first, so that it counts the same trips ("" in files written before)
    check_launch: str = ""

    @property
    def key(self) -> tuple[str, str]:
        return self.name, self.source_hash


@dataclass
class PipelineTable:
    """The kernels of one results file, looked up by (name, source hash)."""

    kernels: dict[tuple[str, str], TunedKernel]
    digest: str  # of the file's content: part of Triton's cache key
    path: str = ""
    parsed: "dict[tuple[str, str], Pipeline]" = field(default_factory=dict)  # key -> its Pipeline, parsed when read

    def lookup(self, name: str, ptx: str) -> TunedKernel | None:
        return self.kernels.get((name, source_hash(ptx)))

    def names(self) -> set[str]:
        return {k[0] for k in self.kernels}


def write_pipelines(path: str | Path, kernels: list[TunedKernel], **meta) -> Path:
    """Write ``kernels`` (sorted by name, hash) as a results file."""
    from ptxopt import __version__

    path = Path(path)
    seen: dict[tuple[str, str], TunedKernel] = {}
    for k in kernels:
        seen[k.key] = k
    doc = {"format": FORMAT, "ptxopt": __version__, **meta,
           "kernels": [asdict(seen[key]) for key in sorted(seen)]}
    from ptxopt.support.outputs import write_atomic

    return write_atomic(path, json.dumps(doc, indent=1, sort_keys=False) + "\n")


def read_pipelines(path: str | Path) -> PipelineTable:
    """Load a results file; :class:`PipelinesError` with one clear line on
    anything wrong (missing file, bad JSON, unknown format, a bad entry, a
    pipeline string ptxopt does not accept)."""
    from ptxopt.passes.pipeline import Pipeline, PipelineError

    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise PipelinesError(f"cannot read pipelines file {path}: {e.strerror or e}") from None
    try:
        doc = jsontext.loads(raw)  # a BOM accepted; nesting past the limit: invalid JSON
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise PipelinesError(f"{path}: invalid JSON: {e}") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise PipelinesError(f"{path}: not a ptxopt pipelines file (\"format\" must be {FORMAT!r})")
    items = doc.get("kernels")
    if not isinstance(items, list):
        raise PipelinesError(f"{path}: \"kernels\" must be a list")
    known = {f for f in TunedKernel.__dataclass_fields__}
    out: dict[tuple[str, str], TunedKernel] = {}
    parsed = {}
    for i, d in enumerate(items):
        if not isinstance(d, dict) or not all(isinstance(d.get(k), str) for k in ("name", "source_hash",
                                                                                  "pipeline")):
            raise PipelinesError(f"{path}: kernels[{i}] needs string \"name\", \"source_hash\" and \"pipeline\"")
        try:
            pipeline = Pipeline.parse(d["pipeline"])
        except PipelineError as e:
            raise PipelinesError(f"{path}: kernels[{i}] ({d['name']}): {e}") from None
        k = TunedKernel(**{key: v for key, v in d.items() if key in known})
        out[k.key], parsed[k.key] = k, pipeline
    return PipelineTable(out, hashlib.sha256(raw).hexdigest(), str(path), parsed)


__all__ = ["FORMAT", "PipelineTable", "PipelinesError", "TunedKernel", "read_pipelines", "source_hash",
           "write_pipelines"]
