"""Compile PTX text to a cubin with ptxas and read back what ptxas reports.

:func:`compile_ptx` is the single entry point the rest of ptxopt uses to ask
"does this PTX assemble, and what does it cost?".  It runs
``ptxas -arch=<arch> -v`` in a private temporary directory (so concurrent
compiles never collide and messages never contain a random temp path),
turns the ``-v`` report into :class:`KernelResources` per function, and turns
failures into :class:`PtxasError` carrying the PTX line number ptxas blamed.

Which ptxas runs is decided by the module's ``.version`` directive, see
:func:`ptxopt.toolchain.locate.select_ptxas`.

The ``-v`` report looks like this (ptxas 12.9 and 13.x print the same
shape; ``.func`` callees get a "Function properties" block but never a
"Used N registers" line, and ``-arch=sm_90`` omits the ``cmem`` items)::

    ptxas info    : Compiling entry function 'k' for 'sm_89'
    ptxas info    : Function properties for k
        8 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads
    ptxas info    : Used 64 registers, used 1 barriers, 1024 bytes smem, 372 bytes cmem[0]
    ptxas info    : Function properties for helper
        264 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
"""

from __future__ import annotations

import hashlib
import os
import re
import shlex
import tempfile
import threading
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Iterable

from ptxopt.support.bounded_memo import BoundedMemo
from ptxopt.support.session_state import Slot

from .arch import DEFAULT_ARCH
from .errors import Diagnostic, PtxasError
from .locate import Ptxas, identify_ptxas, select_ptxas
from .process import run_tool

_SOURCE_NAME = "kernel.ptx"
_CUBIN_NAME = "kernel.cubin"

_VERSION_RE = re.compile(r"^[ \t]*\.version[ \t]+(\d+)\.(\d+)", re.M)
_ENTRY_DECL_RE = re.compile(r"\.entry\s+([A-Za-z_$%.][\w$.]*)")

_DIAGNOSTIC_RE = re.compile(
    r"^ptxas(?:\s+(?P<file>.+?),\s+line\s+(?P<line>\d+);)?\s*"
    r"(?P<severity>error|fatal|warning)\s*:\s?(?P<message>.*)$"
)
_COMPILING_RE = re.compile(r"^ptxas info\s*: Compiling entry function '(?P<name>[^']+)'")
_PROPERTIES_RE = re.compile(r"^ptxas info\s*: Function properties for (?P<name>\S+)")
_USED_RE = re.compile(r"^ptxas info\s*: Used (?P<items>.*)$")

# "<number> <what>" items of the report lines -> KernelResources field.
_ITEM_FIELDS: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern), name)
    for pattern, name in (
        (r"^(\d+) bytes stack frame$", "stack_frame_bytes"),
        (r"^(\d+) bytes spill stores$", "spill_store_bytes"),
        (r"^(\d+) bytes spill loads$", "spill_load_bytes"),
        (r"^(?:Used )?(\d+) registers$", "registers"),
        (r"^used (\d+) barriers$", "barriers"),
        (r"^(\d+) bytes smem$", "shared_bytes"),
        (r"^(\d+) bytes cumulative stack size$", "cumulative_stack_bytes"),
    )
)
_CMEM_RE = re.compile(r"^(\d+) bytes cmem\[(\d+)\]$")


@dataclass(frozen=True)
class KernelResources:
    """What ptxas reports for one function.

    ``registers``/``barriers`` are None for ``.func`` callees: ptxas only
    reports them for entries (a callee's registers count against its callers).
    """

    registers: int | None
    spill_store_bytes: int = 0
    spill_load_bytes: int = 0
    stack_frame_bytes: int = 0
    shared_bytes: int = 0  # static .shared, bytes
    barriers: int | None = None
    cumulative_stack_bytes: int = 0  # own frame plus the deepest call chain
    constant_bytes: tuple[tuple[int, int], ...] = ()  # ((bank, bytes), ...) e.g. ((0, 360),)
    is_entry: bool = True

    @property
    def spill_bytes(self) -> int:
        return self.spill_store_bytes + self.spill_load_bytes

    @property
    def spills(self) -> bool:
        return self.spill_bytes > 0


@dataclass(frozen=True)
class CompileResult:
    """A successful ptxas run.

    ``kernels`` maps each ``.entry`` name to its resources, in PTX source
    order; ``functions`` does the same for ``.func`` callees ptxas reported.
    The convenience properties (``registers``, ``spill_bytes`` ...) describe
    the first entry, which is what single-kernel callers want.
    """

    arch: str
    ptxas_path: Path
    ptxas_version: str  # CUDA release of the ptxas used, e.g. "12.9"
    wall_time_s: float
    cubin: bytes = field(repr=False)
    log: str = field(repr=False)
    kernels: dict[str, KernelResources]
    functions: dict[str, KernelResources] = field(default_factory=dict)
    warnings: tuple[Diagnostic, ...] = ()
    ptx_version: tuple[int, int] | None = None

    @property
    def kernel(self) -> KernelResources:
        if not self.kernels:
            raise LookupError("the module has no .entry function")
        return next(iter(self.kernels.values()))

    @property
    def registers(self) -> int:
        return self.kernel.registers or 0

    @property
    def spill_store_bytes(self) -> int:
        return self.kernel.spill_store_bytes

    @property
    def spill_load_bytes(self) -> int:
        return self.kernel.spill_load_bytes

    @property
    def spill_bytes(self) -> int:
        return self.kernel.spill_bytes

    @property
    def stack_frame_bytes(self) -> int:
        return self.kernel.stack_frame_bytes


def ptx_isa_version(ptx: str) -> tuple[int, int] | None:
    """The ``.version`` the module declares, or None if it has none."""
    m = _VERSION_RE.search(ptx)
    return (int(m.group(1)), int(m.group(2))) if m else None


#: Extra ptxas flags for every compile that names neither a binary nor flags (shell words), set
#: with ``PTXOPT_PTXAS`` to make ptxopt assemble as another tool does: tuning a Triton cache
#: compiles as Triton's ``cubin`` stage will (:mod:`ptxopt.triton.tune_toolchain`). Part of the
#: evaluation cache keys (:func:`ptxopt.toolchain.toolchain_versions`).
FLAGS_ENV = "PTXOPT_PTXAS_FLAGS"


def default_flags() -> tuple[str, ...]:
    """The flags of ``PTXOPT_PTXAS_FLAGS`` (none when unset)."""
    return tuple(shlex.split(os.environ.get(FLAGS_ENV, "")))


def environment_key() -> tuple[str, tuple[str, ...]]:
    """What the environment says about the default ptxas (``PTXOPT_PTXAS``, ``PTXOPT_PTXAS_FLAGS``):
    part of the in-process memos that hold compiles made with the default."""
    return os.environ.get("PTXOPT_PTXAS", ""), default_flags()


def compile_ptx(
    ptx: str,
    arch: str = DEFAULT_ARCH,
    *,
    timeout: float = 120.0,
    extra_args: Iterable[str] = (),
    ptxas: Ptxas | str | Path | None = None,
    memo: bool = True,
) -> CompileResult:
    """Assemble ``ptx`` for ``arch``; raise :class:`PtxasError` if ptxas rejects it.

    ``ptxas`` forces a specific binary; by default the oldest installed ptxas
    that accepts the module's ``.version`` and ``arch`` is used (and named in
    the result).  ``timeout`` bounds the ptxas run (:class:`ToolchainTimeout`).

    ``memo``: answer a compile of the same text, arch, flags and ptxas binary
    from the evaluation session's bounded memo (:data:`MEMO_ENTRIES`) instead of
    running ptxas again -- the evaluator and the verifier both compile each
    candidate, and the original once per candidate. A hit returns a fresh
    :class:`CompileResult` (its dicts copied; the rest is immutable) whose
    ``wall_time_s`` is the run that produced it; a rejection is remembered
    and raised again as a new :class:`PtxasError`. Timeouts and tool errors
    are not remembered. ``memo=False`` always runs ptxas (timing benchmarks).
    """
    if isinstance(extra_args, str):  # "-O3 -lineinfo" would otherwise be split into characters
        extra_args = extra_args.split()
    extra_args = tuple(extra_args)
    if not extra_args and ptxas is None:
        extra_args = default_flags()
    version = ptx_isa_version(ptx)
    if ptxas is None:
        tool = select_ptxas(version, arch)
    elif isinstance(ptxas, Ptxas):
        tool = ptxas
    else:
        tool = identify_ptxas(ptxas)
    if not memo:
        return _compile(ptx, arch, timeout, extra_args, tool, version)
    key = (hashlib.sha256(ptx.encode("utf-8", "surrogatepass")).digest(), arch, extra_args,
           str(tool.path), tool.full_version)
    memo = _MEMO.get()
    with memo.lock:
        hit = memo.lookup(key)
    if hit is None:
        try:
            hit = _compile(ptx, arch, timeout, extra_args, tool, version)
        except PtxasError as e:
            hit = e
        with memo.lock:
            memo.remember(key, hit)
    if isinstance(hit, PtxasError):
        raise PtxasError(hit.diagnostics, hit.log, hit.returncode)
    return replace(hit, kernels=dict(hit.kernels), functions=dict(hit.functions))


#: Compile results (or rejections) kept per evaluation session, most recently used last.
#: A 16x16x16 gemm cubin is ~100 KB, so the memo stays within tens of MB.
MEMO_ENTRIES = 256
#: the active session's compiles (:mod:`ptxopt.support.session_state`)
_MEMO = Slot("toolchain.ptxas", lambda: BoundedMemo(lambda: MEMO_ENTRIES, lock=threading.Lock()))


def clear_memo() -> None:
    """Forget the active session's remembered compiles (tests, timing benchmarks)."""
    memo = _MEMO.get()
    with memo.lock:
        memo.clear()


def _compile(ptx: str, arch: str, timeout: float, extra_args: tuple[str, ...], tool: Ptxas,
             version: tuple[int, int] | None) -> CompileResult:
    """One ptxas run (no memo)."""
    with tempfile.TemporaryDirectory(prefix="ptxopt-ptxas-") as tmp:
        Path(tmp, _SOURCE_NAME).write_text(ptx, encoding="utf-8", newline="")
        argv = [tool.path, f"-arch={arch}", "-v", *extra_args, "-o", _CUBIN_NAME, _SOURCE_NAME]
        run = run_tool(argv, timeout=timeout, cwd=tmp)
        log = run.output.replace(tmp + "/", "").replace(tmp, ".")
        cubin_path = Path(tmp, _CUBIN_NAME)
        cubin = cubin_path.read_bytes() if cubin_path.exists() else b""

    diagnostics = parse_diagnostics(log)
    if run.returncode == 0 and not cubin:
        why = " (a virtual compute_* target only checks the PTX)" if arch.startswith("compute_") else ""
        diagnostics += (Diagnostic("error", None, f"ptxas wrote no cubin for -arch={arch}{why}"),)
    if run.returncode != 0 or not cubin:
        raise PtxasError(diagnostics, log, run.returncode)

    kernels, functions = parse_resources(log)
    order = {name: i for i, name in enumerate(_ENTRY_DECL_RE.findall(ptx))}
    kernels = dict(sorted(kernels.items(), key=lambda kv: order.get(kv[0], len(order))))
    return CompileResult(
        arch=arch,
        ptxas_path=tool.path,
        ptxas_version=tool.version,
        wall_time_s=run.wall_time_s,
        cubin=cubin,
        log=log,
        kernels=kernels,
        functions=functions,
        warnings=tuple(d for d in diagnostics if d.severity == "warning"),
        ptx_version=version,
    )


def parse_diagnostics(log: str) -> tuple[Diagnostic, ...]:
    """Every error/fatal/warning line of a ptxas log, in order."""
    out = []
    for line in log.splitlines():
        m = _DIAGNOSTIC_RE.match(line.strip())
        if m:
            lineno = int(m["line"]) if m["line"] else None
            out.append(Diagnostic(m["severity"], lineno, m["message"].strip()))
    return tuple(out)


def parse_resources(log: str) -> tuple[dict[str, KernelResources], dict[str, KernelResources]]:
    """Split a ``ptxas -v`` log into (entries, callees) resource reports.

    "Function properties for X" opens X's frame report (the indented line
    that follows); "Used ..." belongs to the entry named by the latest
    "Compiling entry function".
    """
    fields: dict[str, dict[str, object]] = {}
    entries: list[str] = []
    compiling: str | None = None
    properties_of: str | None = None

    for raw in log.splitlines():
        line = raw.strip()
        if m := _COMPILING_RE.match(line):
            compiling = m["name"]
            entries.append(compiling)
            fields.setdefault(compiling, {})
        elif m := _PROPERTIES_RE.match(line):
            properties_of = m["name"]
            fields.setdefault(properties_of, {})
        elif m := _USED_RE.match(line):
            if compiling is not None:
                _parse_items("Used " + m["items"], fields[compiling])
        elif properties_of is not None and raw[:1].isspace() and "stack frame" in line:
            _parse_items(line, fields[properties_of])
            properties_of = None

    kernels, functions = {}, {}
    for name, f in fields.items():
        is_entry = name in entries
        res = KernelResources(
            registers=f.get("registers") if is_entry else None,  # type: ignore[arg-type]
            is_entry=is_entry,
            **{k: v for k, v in f.items() if k != "registers"},  # type: ignore[arg-type]
        )
        (kernels if is_entry else functions)[name] = res
    return kernels, functions


def _parse_items(line: str, into: dict[str, object]) -> None:
    cmem: list[tuple[int, int]] = list(into.get("constant_bytes", ()))  # type: ignore[arg-type]
    for item in (s.strip() for s in line.split(",")):
        if m := _CMEM_RE.match(item):
            cmem.append((int(m.group(2)), int(m.group(1))))
            continue
        for pattern, name in _ITEM_FIELDS:
            if m := pattern.match(item):
                into.setdefault(name, int(m.group(1)))
                break
    if cmem:
        into["constant_bytes"] = tuple(sorted(set(cmem)))
