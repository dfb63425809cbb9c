"""Find ptxas and nvdisasm in the NVIDIA PyPI wheels and pick the right ptxas.

Why wheels and not ``$PATH``/``/usr/local/cuda``: the SASS ptxas produces
depends on its release, so results (register counts, cycle estimates, cache
keys) are only reproducible if every machine uses the same, pip-pinned
binaries.  A system CUDA install is therefore never consulted; the only
escape hatches are explicit environment variables:

* ``PTXOPT_PTXAS`` -- a ptxas binary (or several, joined with ``os.pathsep``)
  used *instead of* the wheels;
* ``PTXOPT_NVDISASM`` -- the nvdisasm binary to use.

Several ptxas releases can be installed side by side (``nvidia-cuda-nvcc-cu12``
ships 12.x, ``nvidia-cuda-nvcc`` ships 13.x).  A given PTX module is compiled
with the *oldest* one that accepts its ``.version`` (see :func:`select_ptxas`):
that keeps the SASS for existing 8.x modules stable when a newer wheel is
added, and newer PTX still compiles.

Tool identification (``--version``) is cached per binary path, keyed on the
file's mtime and size, so a wheel upgrade is picked up without a restart.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path

from . import tables
from .errors import ToolchainError, ToolNotFound, UnsupportedArch, UnsupportedPTXVersion
from .process import run_tool

PTXVersion = tuple[int, int]

_RELEASE_RE = re.compile(r"release (\d+)\.(\d+), V(\d+(?:\.\d+)*)")
_CURRENT_PTX_RE = re.compile(r"current version is '(\d+)\.(\d+)'")
_IDENTIFY_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class Tool:
    """An identified toolchain binary."""

    name: str  # "ptxas" or "nvdisasm"
    path: Path
    release: tuple[int, int]  # CUDA release, e.g. (12, 9)
    full_version: str  # e.g. "12.9.86"

    @property
    def version(self) -> str:
        """The CUDA release as text, e.g. ``"12.9"``."""
        return f"{self.release[0]}.{self.release[1]}"


@dataclass(frozen=True)
class Ptxas(Tool):
    """A ptxas binary and the newest PTX ISA version it accepts."""

    max_ptx_isa: PTXVersion

    def accepts(self, ptx_version: PTXVersion) -> bool:
        return tuple(ptx_version) <= self.max_ptx_isa

    @property
    def archs(self) -> frozenset[str]:
        """Targets ``-arch`` accepts (``sm_89``, ``sm_90a``, ``compute_90`` ...)."""
        return _supported_archs(*_file_key(self.path))

    def supports_arch(self, arch: str) -> bool:
        archs = self.archs
        return not archs or arch in archs  # unparsable --help: let ptxas itself decide


def format_version(version: PTXVersion) -> str:
    return f"{version[0]}.{version[1]}"


# --------------------------------------------------------------------------
# discovery
# --------------------------------------------------------------------------


def _namespace_roots() -> list[Path]:
    """Directories of the ``nvidia`` namespace package (one per wheel location)."""
    try:
        spec = importlib.util.find_spec(tables.NVIDIA_NAMESPACE)
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.submodule_search_locations:
        return []
    return [Path(p) for p in spec.submodule_search_locations]


def _override_paths(tool: str) -> list[Path] | None:
    var = tables.ENV_OVERRIDE[tool]
    value = os.environ.get(var, "").strip()
    if not value:
        return None
    parts = value.split(os.pathsep) if tool == "ptxas" else [value]
    paths = [Path(p).expanduser() for p in parts if p.strip()]
    for p in paths:
        if not (p.is_file() and os.access(p, os.X_OK)):
            raise ToolNotFound(f"{var}={value!r}: {p} is not an executable file")
    return paths


def _candidate_paths(tool: str) -> list[Path]:
    """Every binary for ``tool``: the env override, else the wheels' copies."""
    override = _override_paths(tool)
    if override is not None:
        return override
    found: dict[Path, Path] = {}
    for root in _namespace_roots():
        for filename in tables.TOOL_FILENAMES[tool]:
            for p in sorted(root.glob(tables.TOOL_GLOB.format(tool=filename))):
                if p.is_file() and os.access(p, os.X_OK):
                    found.setdefault(p.resolve(), p)
    if not found:
        where = ", ".join(str(r) for r in _namespace_roots()) or "no `nvidia` package installed"
        raise ToolNotFound(f"no {tool} found in the NVIDIA wheels ({where}); {tables.INSTALL_HINT[tool]}")
    return list(found.values())


def _file_key(path: Path) -> tuple[str, int, int]:
    st = os.stat(path)
    return (str(path), st.st_mtime_ns, st.st_size)


@functools.lru_cache(maxsize=None)
def _identify(name: str, path: str, _mtime_ns: int, _size: int) -> tuple[tuple[int, int], str]:
    run = run_tool([path, "--version"], timeout=_IDENTIFY_TIMEOUT_S)
    m = _RELEASE_RE.search(run.output)
    if run.returncode != 0 or m is None:
        raise ToolNotFound(
            f"{path} does not look like {name}: `{name} --version` printed {run.output.strip()[:200]!r}"
        )
    return (int(m.group(1)), int(m.group(2))), m.group(3)


def identify_tool(name: str, path: str | Path) -> Tool:
    """Run ``path --version`` (cached) and describe the binary."""
    p = Path(path)
    try:
        key = _file_key(p)
    except OSError:
        raise ToolNotFound(f"{name} not found at {p}") from None
    release, full = _identify(name, *key)
    return Tool(name, p, release, full)


def identify_ptxas(path: str | Path) -> Ptxas:
    """Describe one ptxas binary, including the newest PTX ISA it accepts."""
    tool = identify_tool("ptxas", path)
    max_isa = tables.MAX_PTX_ISA_BY_CUDA.get(tool.release)
    if max_isa is None:  # a release newer (or older) than the table: ask ptxas itself
        max_isa = _probe_max_ptx_isa(*_file_key(tool.path))
    return Ptxas(tool.name, tool.path, tool.release, tool.full_version, max_isa)


def installed_ptxas() -> tuple[Ptxas, ...]:
    """All usable ptxas binaries, oldest release first."""
    tools = [identify_ptxas(p) for p in _candidate_paths("ptxas")]
    return tuple(sorted(tools, key=lambda t: (t.release, t.full_version, str(t.path))))


def find_nvdisasm() -> Tool:
    """The nvdisasm to use: ``PTXOPT_NVDISASM``, else the newest one in the wheels.

    The newest release is preferred because nvdisasm is backward compatible
    (it decodes older architectures) but not forward compatible.
    """
    tools = [identify_tool("nvdisasm", p) for p in _candidate_paths("nvdisasm")]
    return max(tools, key=lambda t: (t.release, t.full_version, str(t.path)))


# --------------------------------------------------------------------------
# capability probes (run ptxas; cached per binary)
# --------------------------------------------------------------------------

_PROBE_PTX = ".version 99.9\n.target sm_75\n.address_size 64\n"


@functools.lru_cache(maxsize=None)
def _probe_max_ptx_isa(path: str, _mtime_ns: int, _size: int) -> PTXVersion:
    with tempfile.TemporaryDirectory(prefix="ptxopt-probe-") as tmp:
        src = Path(tmp, "probe.ptx")
        src.write_text(_PROBE_PTX)
        run = run_tool([path, "-o", Path(tmp, "probe.cubin"), src], timeout=_IDENTIFY_TIMEOUT_S)
    m = _CURRENT_PTX_RE.search(run.output)
    if m is None:
        raise ToolchainError(
            f"cannot tell which PTX ISA versions {path} accepts: it is not in the "
            f"release table and ptxas did not name its current version ({run.output.strip()[:200]!r})"
        )
    return int(m.group(1)), int(m.group(2))


def probe_max_ptx_isa(ptxas: Ptxas | str | Path) -> PTXVersion:
    """Ask ptxas itself for its newest PTX ISA (bypasses the release table)."""
    path = ptxas.path if isinstance(ptxas, Tool) else Path(ptxas)
    return _probe_max_ptx_isa(*_file_key(path))


@functools.lru_cache(maxsize=None)
def _supported_archs(path: str, _mtime_ns: int, _size: int) -> frozenset[str]:
    """Parse the ``--gpu-name`` "Allowed values" list from ``ptxas --help``."""
    run = run_tool([path, "--help"], timeout=_IDENTIFY_TIMEOUT_S)
    text = run.output
    start = text.find("--gpu-name")
    allowed = text.find("Allowed values for this option:", start)
    if start < 0 or allowed < 0:
        return frozenset()
    end = text.find("\n\n", allowed)
    return frozenset(re.findall(r"'([^']+)'", text[allowed : end if end > 0 else None]))


# --------------------------------------------------------------------------
# selection
# --------------------------------------------------------------------------


def _sm_numbers(t: Ptxas) -> list[int]:
    return sorted(int(m.group(1)) for a in t.archs if (m := re.fullmatch(r"sm_(\d+)", a)))


def _arch_span(t: Ptxas) -> str:
    """`` (sm_50..sm_121)``: the plain ``sm_*`` targets a ptxas knows, for messages."""
    nums = _sm_numbers(t)
    return f" (sm_{nums[0]}..sm_{nums[-1]})" if nums else ""


def _suggest(tools: list[Ptxas]) -> str:
    """An architecture to name in a message: sm_89 (the default) when a ptxas
    targets it, else the newest plain ``sm_*`` one does."""
    from .arch import DEFAULT_ARCH

    if any(t.supports_arch(DEFAULT_ARCH) for t in tools):
        return DEFAULT_ARCH
    nums = sorted({n for t in tools for n in _sm_numbers(t)})
    return f"sm_{nums[-1]}" if nums else DEFAULT_ARCH


def select_ptxas(ptx_version: PTXVersion | None = None, arch: str | None = None) -> Ptxas:
    """The oldest installed ptxas that accepts ``ptx_version`` (and ``arch``).

    Oldest-first keeps the generated SASS stable when newer wheels are
    installed alongside.  ``ptx_version=None`` means "any" (the oldest
    ptxas).  Raises :class:`UnsupportedPTXVersion` if every ptxas is too
    old, :class:`UnsupportedArch` if those that accept the version cannot
    target ``arch`` (CUDA 13 dropped sm_50..sm_72, 12.x lacks the newest
    GPUs), and :class:`ToolNotFound` if there is no ptxas at all.
    """
    tools = installed_ptxas()
    if ptx_version is not None:
        ptx_version = (int(ptx_version[0]), int(ptx_version[1]))
        accepting = [t for t in tools if t.accepts(ptx_version)]
        if not accepting:
            known = ", ".join(f"ptxas {t.version} accepts <= {format_version(t.max_ptx_isa)}" for t in tools)
            raise UnsupportedPTXVersion(
                f"PTX .version {format_version(ptx_version)} is newer than any installed ptxas "
                f"supports ({known}); install a newer nvidia-cuda-nvcc wheel, point PTXOPT_PTXAS "
                f"at a newer ptxas, or lower the module's .version"
            )
    else:
        accepting = list(tools)
    if arch is not None:
        targeting = [t for t in accepting if t.supports_arch(arch)]
        if not targeting:
            which = f"that accepts PTX .version {format_version(ptx_version)} " if ptx_version else ""
            known = ", ".join(f"ptxas {t.version}" + _arch_span(t) for t in accepting)
            raise UnsupportedArch(f"no installed ptxas {which}can target {arch!r} (tried {known}); "
                                  f"compile for an architecture they support with --arch "
                                  f"(e.g. --arch {_suggest(accepting)}; arch= in Python): the module's "
                                  f".target is left as written")
        accepting = targeting
    return accepting[0]
