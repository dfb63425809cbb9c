"""Launch contracts: how a kernel outside the corpus is launched to check it.

Equivalence is checked by running the original and the transformed kernel in
the interpreter (:mod:`ptxopt.equivalence.interpret`), and that needs what the kernel's real
launcher knows: grid and block, the dynamic shared memory, the value of each
scalar argument and (optionally) the size and type of each buffer. That is
the *contract*. It comes from, in order of precedence:

1. command-line options: ``--grid X,Y,Z --block X,Y,Z [--shared-bytes N]
   [--scalar NAME=V ...]`` (these override single fields of a file below);
2. ``--contract FILE``;
3. ``KERNEL.contract.json`` next to ``KERNEL.ptx`` (:func:`contract_path_for`),
   loaded automatically when present;
4. the corpus manifest entry whose kernel name and parameter names match;
5. otherwise a *guess*: one block of one thread, default arguments -- and it
   is said so wherever the result is reported.

Contract files use the schema of one corpus manifest entry
(``corpus/README.md``): ``{"entry": ..., "launch": {"grid": [x, y, z],
"block": [x, y, z], "shared_bytes": n}, "params": [...]}``. Every key but
``launch`` is optional. ``params`` lists parameters by their ``.param`` name
with a ``role``: scalars give their ``value``; when *every* parameter of the
entry is described with its ``role``, ``dtype`` and buffer ``count``, the
buffers are allocated exactly as described (as for a corpus kernel);
otherwise each 64-bit parameter gets ``buffer_bytes`` (default 65536) of
random float32 values. A file may also hold several entries, as a JSON list
or as ``{"kernels": [...]}``, each naming its ``entry``.

A contract may also give the *performance* launch, what the user really runs
(role ``performance``; never run by the interpreter, it is the throughput
estimate's): ``"performance": {"grid": [x, y, z], "block": [x, y, z],
"shared_bytes": n, "scalars": {".param name": value}, "counts": {...},
"problem": "..."}`` (``counts`` and ``problem`` as in the corpus manifest: ``counts``, the
elements of each buffer at that size, with the buffers' ``dtype``/``role`` from ``params``, give
the bytes the launch moves to/from DRAM and override the footprint found from the kernel for the
DRAM floor, as ``--perf-bytes NAME=BYTES`` does; ``problem`` is not used here).
Only ``block`` is required; no ``grid`` means the grid is unknown (the
estimate then assumes full waves and says so). An entry may give only a
performance launch (no ``launch``); it then gives no check launch. Options
``--perf-grid/--perf-block/--perf-shared-bytes/--perf-scalar`` override its
fields (:func:`resolve_performance`), as ``--grid`` ... do the check launch's.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path

from ptxopt.support import jsontext
from ptxopt.equivalence.launch import ContractError, Launch, Origin, Role
from ptxopt.ptx.ir import Module

CONTRACT_SUFFIX = ".contract.json"


# --------------------------------------------------------------------------
# Option parsing (shared by every command with --grid/--block/--scalar)
# --------------------------------------------------------------------------

def parse_dim3(text: str | None, what: str = "dimension") -> tuple[int, int, int] | None:
    """``"128"``, ``"16,16"``, ``"4x2x1"`` -> a 3-tuple (missing sizes are 1)."""
    if text is None:
        return None
    try:
        parts = [int(x) for x in str(text).replace("x", ",").split(",") if x.strip()]
    except ValueError:
        raise ContractError(f"{what} must be X[,Y[,Z]] integers, got {text!r}") from None
    if not 1 <= len(parts) <= 3 or any(p < 1 for p in parts):
        raise ContractError(f"{what} must be 1 to 3 positive integers, got {text!r}")
    return tuple(parts + [1] * (3 - len(parts)))  # type: ignore[return-value]


def parse_scalar_value(name: str, value) -> int | float:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ContractError(f"scalar {name}: {value!r} is not a number")
    if isinstance(value, (int, float)):
        return value
    try:
        return int(value, 0)
    except ValueError:
        try:
            return float(value)
        except ValueError:
            raise ContractError(f"scalar {name}: {value!r} is not a number") from None


def parse_scalars(items, option: str = "--scalar") -> dict[str, int | float]:
    """``["n=128", "alpha=0.5"]`` -> ``{"n": 128, "alpha": 0.5}`` (``option`` names the flag in errors)."""
    out: dict[str, int | float] = {}
    for it in items or ():
        name, eq, value = str(it).partition("=")
        if not eq or not name:
            raise ContractError(f"{option} wants NAME=VALUE, got {it!r}")
        out[name] = parse_scalar_value(name, value)
    return out


# --------------------------------------------------------------------------
# Files
# --------------------------------------------------------------------------

def contract_path_for(ptx_path: str | Path) -> Path:
    """``dir/kernel.ptx`` -> ``dir/kernel.contract.json`` (any suffix is replaced)."""
    p = Path(ptx_path)
    return p.with_name(p.stem + CONTRACT_SUFFIX) if p.suffix else p.with_name(p.name + CONTRACT_SUFFIX)


def _int(value, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ContractError(f"{what} must be a non-negative integer, got {value!r}")
    return value


def _dim3_json(value, what: str) -> tuple[int, int, int]:
    if isinstance(value, (int, str)) and not isinstance(value, bool):
        return parse_dim3(str(value), what)  # type: ignore[return-value]
    if not isinstance(value, list) or not 1 <= len(value) <= 3:
        raise ContractError(f"{what} must be a list of 1 to 3 positive integers, got {value!r}")
    for v in value:
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ContractError(f"{what} must be a list of 1 to 3 positive integers, got {value!r}")
    return tuple(list(value) + [1] * (3 - len(value)))  # type: ignore[return-value]


def contract_from_json(d: dict, source: str) -> Launch:
    """One manifest-entry-shaped object -> a :class:`~ptxopt.equivalence.launch.Launch` (origin ``contract``)."""
    from ptxopt.kernels.corpus import KernelSpec, Param
    from ptxopt.kernels.corpus import Launch as ManifestLaunch

    if not isinstance(d, dict):
        raise ContractError(f"{source}: a contract must be a JSON object, got {type(d).__name__}")
    launch = d.get("launch", {k: d[k] for k in ("grid", "block", "shared_bytes") if k in d})
    if not isinstance(launch, dict) or "grid" not in launch or "block" not in launch:
        raise ContractError(f"{source}: needs \"launch\": {{\"grid\": [x, y, z], \"block\": [x, y, z]}}")
    grid = _dim3_json(launch["grid"], f"{source}: launch.grid")
    block = _dim3_json(launch["block"], f"{source}: launch.block")
    shared = _int(launch.get("shared_bytes", 0), f"{source}: launch.shared_bytes")
    entry = d.get("entry")
    if entry is not None and not isinstance(entry, str):
        raise ContractError(f"{source}: entry must be a string")
    raw_params = d.get("params", [])
    if not isinstance(raw_params, list) or not all(isinstance(p, dict) for p in raw_params):
        raise ContractError(f"{source}: params must be a list of objects")
    scalars: dict = {}
    complete = bool(raw_params)
    for i, p in enumerate(raw_params):
        name = p.get("name")
        if not isinstance(name, str):
            raise ContractError(f"{source}: params[{i}] has no \"name\" (the .param name)")
        role = p.get("role")
        if role is not None and role not in ("input", "output", "inout", "scalar", "scratch"):
            raise ContractError(f"{source}: param {name}: unknown role {role!r} "
                                "(input, output, inout, scalar or scratch)")
        if role == "scalar" or ("value" in p and role is None):
            if "value" not in p:
                raise ContractError(f"{source}: scalar param {name} has no \"value\"")
            scalars[name] = parse_scalar_value(name, p["value"])
        if role is None or "dtype" not in p or (role != "scalar" and not isinstance(p.get("count"), int)):
            complete = False
    buffer_bytes = _int(d["buffer_bytes"], f"{source}: buffer_bytes") if "buffer_bytes" in d else 65536
    spec = None
    if complete:
        try:
            params = tuple(Param.from_json({**p, "value": scalars[p["name"]]} if p["name"] in scalars else p)
                           for p in raw_params)
        except (KeyError, TypeError) as e:
            raise ContractError(f"{source}: malformed param: {e!r}") from None
        spec = KernelSpec(id=str(d.get("id", entry or Path(source).stem)), family=str(d.get("family", "")),
                          compiler=str(d.get("compiler", "")), path="", entry=entry or "",
                          source=source, generator="", arch=str(d.get("arch", "")),
                          ptx_version=str(d.get("ptx_version", "")),
                          launch=ManifestLaunch(grid, block, shared), params=params)
    return Launch(grid, block, shared, scalars, origin=Origin.CONTRACT, source=source, entry=entry,
                  params=tuple(p["name"] for p in raw_params), buffer_bytes=buffer_bytes, buffers=spec)


def _check_threads(block: tuple[int, int, int], what: str) -> None:
    from ptxopt.interp.launcher import MAX_THREADS

    threads = block[0] * block[1] * block[2]
    if threads > MAX_THREADS:
        raise ContractError(f"{what} {list(block)} has {threads} threads; a block has at most {MAX_THREADS}")


#: ``counts`` (buffer element counts at that size, by .param name) and
#: ``problem`` are read by the corpus (``KernelSpec.performance_spec``); a
#: contract's are checked so that a manifest entry is a valid contract.
_PERFORMANCE_KEYS = ("grid", "block", "shared_bytes", "scalars", "counts", "problem")


def performance_from_json(d: dict, source: str) -> Launch | None:
    """The ``"performance"`` launch of one manifest-entry-shaped object (role
    ``performance``, origin ``contract``); None when it has none."""
    if not isinstance(d, dict):
        raise ContractError(f"{source}: a contract must be a JSON object, got {type(d).__name__}")
    perf = d.get("performance")
    if perf is None:
        return None
    if not isinstance(perf, dict) or "block" not in perf:
        raise ContractError(f"{source}: \"performance\" needs {{\"block\": [x, y, z]}} (and \"grid\" "
                            "when known)")
    unknown = sorted(k for k in perf if k not in _PERFORMANCE_KEYS)
    if unknown:
        raise ContractError(f"{source}: performance: unknown key {', '.join(map(repr, unknown))} "
                            f"(known: {', '.join(_PERFORMANCE_KEYS)})")
    grid = None if perf.get("grid") is None else _dim3_json(perf["grid"], f"{source}: performance.grid")
    block = _dim3_json(perf["block"], f"{source}: performance.block")
    _check_threads(block, f"{source}: performance.block")
    shared = _int(perf.get("shared_bytes", 0), f"{source}: performance.shared_bytes")
    raw = perf.get("scalars", {})
    if not isinstance(raw, dict):
        raise ContractError(f"{source}: performance.scalars must be an object {{\".param name\": value}}")
    scalars = {}
    for k, v in raw.items():
        try:
            scalars[str(k)] = parse_scalar_value(k, v)
        except ContractError:
            raise ContractError(f"{source}: performance.scalars.{k}: {v!r} is not a number") from None
    counts = perf.get("counts", {})
    if not isinstance(counts, dict) or any(isinstance(v, bool) or not isinstance(v, int) or v < 0
                                           for v in counts.values()):
        raise ContractError(f"{source}: performance.counts must be an object {{\".param name\": elements}}")
    entry = d.get("entry")
    if entry is not None and not isinstance(entry, str):
        raise ContractError(f"{source}: entry must be a string")
    return Launch(grid, block, shared, scalars, origin=Origin.CONTRACT, role=Role.PERFORMANCE,
                  source=source, entry=entry, footprint_bytes=_counted_bytes(counts, d.get("params")))


def _counted_bytes(counts: dict, params) -> int | None:
    """DRAM bytes of ``performance.counts`` (elements per buffer) with the dtypes and roles of
    ``params``: every counted buffer once, an ``inout`` one twice (read and written back), as
    :func:`ptxopt.sim.occupancy.dram_bytes_of_spec` counts a corpus kernel.  The user's counts override
    the footprint found from the kernel (the DRAM floor's source ``counts``).  None when nothing is
    counted or a counted buffer's dtype is not described (the kernel's footprint then applies)."""
    if not counts:
        return None
    from ptxopt.sim.occupancy import _DTYPE_BYTES

    described = {p.get("name"): p for p in params or () if isinstance(p, dict)}
    total = 0
    for name, n in counts.items():
        p = described.get(name)
        size = _DTYPE_BYTES.get(p.get("dtype")) if p is not None else None
        if size is None:
            return None
        total += size * n * (2 if p.get("role") == "inout" else 1)
    return total


def _has_check_launch(d) -> bool:
    """Whether a contract object gives a check launch; one with only a
    ``performance`` entry does not (and is no error)."""
    return not (isinstance(d, dict) and "performance" in d and "launch" not in d
                and "grid" not in d and "block" not in d)


def _read_items(path: Path) -> list:
    try:
        data = jsontext.loads(path.read_bytes())  # a BOM accepted; nesting past the limit: invalid JSON
    except UnicodeDecodeError as e:
        raise ContractError(f"{path}: not UTF-8 text ({e.reason})") from None
    except OSError as e:
        raise ContractError(f"cannot read contract {path}: {e.strerror or e}") from None
    except json.JSONDecodeError as e:
        raise ContractError(f"{path}: invalid JSON: {e}") from None
    if isinstance(data, dict) and "kernels" in data:
        data = data["kernels"]
    items = data if isinstance(data, list) else [data]
    if not items:
        raise ContractError(f"{path}: no contract in the file")
    return items


def _entries_named(path: Path, items: list, launches: list[Launch]) -> None:
    if len(items) > 1 and any(c.entry is None for c in launches):
        raise ContractError(f"{path}: with several contracts, each must name its \"entry\"")


def load_performance_file(path: str | Path) -> list[Launch]:
    """Every performance launch in a contract file (entries without one give none)."""
    path = Path(path)
    items = _read_items(path)
    out = [performance_from_json(d, path.name if len(items) == 1 else f"{path.name}[{i}]")
           for i, d in enumerate(items)]
    out = [p for p in out if p is not None]
    _entries_named(path, items, out)
    return out


def load_contract_file(path: str | Path) -> list[Launch]:
    """Every contract (check launch) in a contract file (one object, a list, or
    ``{"kernels": [...]}``); an entry with only a ``performance`` launch gives none."""
    path = Path(path)
    items = _read_items(path)
    out = [contract_from_json(d, path.name if len(items) == 1 else f"{path.name}[{i}]")
           for i, d in enumerate(items) if _has_check_launch(d)]
    _entries_named(path, items, out)
    return out


# --------------------------------------------------------------------------
# Putting it together: file + options -> contracts
# --------------------------------------------------------------------------

@dataclass
class Contracts:
    """The launches given for a module: per entry, or one for every entry."""

    items: list[Launch] = field(default_factory=list)

    def for_entry(self, entry: str) -> Launch | None:
        for c in self.items:
            if c.entry == entry:
                return c
        for c in self.items:
            if c.entry is None:
                return c.with_entry(entry)
        return None

    def __bool__(self) -> bool:
        return bool(self.items)


def _contract_file(ptx_path, contract_file, auto: bool):
    """``--contract`` FILE, else ``KERNEL.contract.json`` next to a PTX file
    (when ``auto`` and it exists); None for neither."""
    if contract_file:
        return contract_file
    if auto and ptx_path and ptx_path != "-" and not str(ptx_path).startswith("corpus:"):
        cand = contract_path_for(ptx_path)
        try:
            if cand.is_file():
                return cand
        except OSError:  # KERNEL.contract.json longer than a file name may be: there is none
            pass
    return None


def resolve_contracts(ptx_path: str | None = None, *, contract_file: str | None = None,
                      grid: str | tuple | None = None, block: str | tuple | None = None,
                      shared_bytes: int | None = None, scalars=(), buffer_bytes: int | None = None,
                      auto: bool = True) -> Contracts:
    """The launches for one input: ``--contract`` FILE, else ``KERNEL.contract.json``
    next to ``ptx_path`` (when ``auto``), with ``grid``/``block``/
    ``shared_bytes``/``scalars`` options overriding their fields. Options
    without a file need both ``grid`` and ``block`` (origin ``options``)."""
    path = _contract_file(ptx_path, contract_file, auto)
    items: list[Launch] = load_contract_file(path) if path is not None else []
    g = grid if isinstance(grid, tuple) or grid is None else parse_dim3(grid, "--grid")
    b = block if isinstance(block, tuple) or block is None else parse_dim3(block, "--block")
    sc = scalars if isinstance(scalars, dict) else parse_scalars(scalars)
    given = g is not None or b is not None or shared_bytes is not None or sc or buffer_bytes is not None
    if not given:
        return Contracts(items)
    if not items:
        if g is None or b is None:
            raise ContractError("give both --grid and --block (or a contract file)")
        return Contracts([Launch(g, b, shared_bytes or 0, dict(sc), origin=Origin.OPTIONS, source="options",
                                 buffer_bytes=65536 if buffer_bytes is None else buffer_bytes)])
    out = []
    for c in items:
        kw = {"grid": g or c.grid, "block": b or c.block, "scalars": {**c.scalars, **sc},
              "shared_bytes": c.shared_bytes if shared_bytes is None else shared_bytes,
              "source": f"{c.source} + options"}
        if buffer_bytes is not None:
            kw["buffer_bytes"] = buffer_bytes
        out.append(replace(c, **kw))
    return Contracts(out)


def resolve_performance(ptx_path: str | None = None, *, contract_file: str | None = None,
                        grid: str | tuple | None = None, block: str | tuple | None = None,
                        shared_bytes: int | None = None, scalars=(), entry: str | None = None,
                        base: Launch | None = None, auto: bool = True, ptx_block=None) -> Launch | None:
    """The performance launch for one input, mirroring :func:`resolve_contracts`:
    the ``"performance"`` entry of ``--contract`` FILE, else of
    ``KERNEL.contract.json`` next to ``ptx_path`` (when ``auto``), else
    ``base`` (a corpus kernel's manifest entry, :func:`~ptxopt.equivalence.launch.performance_of`);
    the options ``grid``/``block``/``shared_bytes``/``scalars`` (``--perf-grid``
    ...) override its fields. Options alone (origin ``options``) need
    ``block``; without ``grid`` the grid is unknown. ``entry`` picks one
    entry's launch from a file with several. None when nothing gives one.
    ``ptx_block``: a callable giving the entry's own ``(block, why)``
    (:func:`ptxopt.equivalence.infer.ptx_block`: ``.reqntid``, or ``.maxntid``
    as a labelled assumption), the block of options that give none; it only
    completes a launch the caller partly gave (``--perf-grid``, ``--perf-scalar``
    ...), it never makes one from the PTX alone."""
    path = _contract_file(ptx_path, contract_file, auto)
    found: list[Launch] = load_performance_file(path) if path is not None else []
    known = _for_entry(found, entry) if found else base
    g = grid if isinstance(grid, tuple) or grid is None else parse_dim3(grid, "--perf-grid")
    b = block if isinstance(block, tuple) or block is None else parse_dim3(block, "--perf-block")
    sc = scalars if isinstance(scalars, dict) else parse_scalars(scalars, "--perf-scalar")
    if b is not None:
        _check_threads(b, "--perf-block")
    if g is None and b is None and shared_bytes is None and not sc:
        return known
    if known is None:
        source = "options"
        if b is None:
            found_block = ptx_block() if ptx_block is not None else None
            if found_block is None:
                raise ContractError("--perf-grid/--perf-shared-bytes/--perf-scalar need the block size: give "
                                    "--perf-block X,Y,Z (or a contract file with a \"performance\" entry; "
                                    "the entry states no .reqntid or .maxntid)")
            b, why = found_block
            source = f"options, {why}"
        return Launch(g, b, shared_bytes or 0, dict(sc), origin=Origin.OPTIONS, role=Role.PERFORMANCE,
                      source=source, entry=entry)
    return replace(known, grid=g or known.grid, block=b or known.block,
                   shared_bytes=known.shared_bytes if shared_bytes is None else shared_bytes,
                   scalars={**known.scalars, **sc}, source=f"{known.source} + options")


def _for_entry(launches: list[Launch], entry: str | None) -> Launch | None:
    if entry is not None:
        for p in launches:
            if p.entry == entry:
                return p
    unnamed = [p for p in launches if p.entry is None]
    if unnamed:
        return unnamed[0] if entry is None else unnamed[0].with_entry(entry)
    if entry is None and len(launches) == 1:
        return launches[0]
    if entry is None:
        raise ContractError(f"{launches[0].source}: performance launches for several entries "
                            f"({', '.join(str(p.entry) for p in launches)}): name the kernel")
    return None


def check_performance(launch: Launch, fn) -> Launch:
    """``launch`` (a performance launch) for the entry ``fn`` (an IR
    ``Function``), or a :class:`ContractError` saying why no GPU would run
    it: a block over 1024 threads or against the entry's ``.reqntid`` /
    ``.maxntid``, or a scalar that names no parameter of the entry."""
    from ptxopt.equivalence.infer import bounds_problem

    where = f"performance launch from {launch.source}"
    _check_threads(launch.block, f"{where}: block")
    bad = bounds_problem(fn, launch)
    if bad is not None:
        raise ContractError(f"{where}: {bad}")
    names = fn.param_names()
    unknown = [n for n in launch.scalars if n not in names]
    if unknown:
        raise ContractError(f"{where}: {fn.name} has no parameter {', '.join(unknown)} "
                            f"(its parameters: {', '.join(names)})")
    return launch if launch.entry == fn.name else launch.with_entry(fn.name)


def check_launch(module: Module, entry: str, contracts=None) -> Launch:
    """The check launch of ``entry``: the one ``contracts`` gives (fitted to
    the entry's parameters), else its corpus manifest entry's, else one
    inferred from the PTX (:func:`ptxopt.equivalence.infer.infer_launch`). A
    contract that does not fit is bad input
    (:class:`~ptxopt.passes.passmanager.InputRejected`)."""
    from ptxopt.equivalence.infer import infer_launch
    from ptxopt.passes.passmanager import InputRejected
    from ptxopt.equivalence.interpret import spec_for
    from ptxopt.equivalence.launch import from_spec
    from ptxopt.interp import Program

    given = contracts.for_entry(entry) if contracts else None
    if given is not None:
        try:
            return given.fit([p.name for p in Program(module).kernel_params(entry)])
        except ContractError as e:
            raise InputRejected(str(e)) from None
    spec = spec_for(Program(module), entry)
    if spec is not None:
        return from_spec(spec)
    return infer_launch(next(f for f in module.entries if f.name == entry), module)


__all__ = ["Contracts", "check_launch", "ContractError", "CONTRACT_SUFFIX", "check_performance", "contract_from_json",
           "contract_path_for", "load_contract_file", "load_performance_file", "parse_dim3", "parse_scalars",
           "performance_from_json", "resolve_contracts", "resolve_performance"]
