"""Load the PTX kernel corpus described by ``corpus/manifest.json``.

The corpus is the fixed set of kernels that ptxopt's passes, tests and
benchmarks run on.  Its PTX is committed, so loading it needs neither nvcc
nor Triton; this module only reads the manifest (schema in
``corpus/README.md``) into frozen dataclasses and answers selectors such as
``gemm_tile``, ``triton``, ``softmax`` or one kernel id.

Where the corpus lives (:func:`corpus_root`): ``$PTXOPT_CORPUS`` if set,
else the copy a wheel ships inside the package (``ptxopt/_corpus``, see
setup.py: the top-level ``corpus/`` is mapped there at build time), else the
``corpus/`` folder beside the ``ptxopt/`` package (a source checkout or an
editable install). So ``pip install .`` is self-contained: the manifest, its
PTX, the committed policies and trajectories come with the package.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

SCHEMA = 1

#: Selector aliases for compilers (``cuda`` means the nvcc-built kernels,
#: ``gemm_tile`` is also a family and selects the same kernels).
COMPILER_ALIASES = {
    "ptxopt-gen": "ptxopt-gen",
    "gen": "ptxopt-gen",
    "nvcc": "nvcc",
    "cuda": "nvcc",
    "triton": "triton",
}


#: Template group of the hand-written families (generated kernels carry their
#: own ``group`` in the manifest). A group is the unit of held-out evaluation:
#: kernels of one group share a template's structure (softmax, layernorm and
#: cross-entropy are all row reductions), so training on one and testing on
#: another of the same group is not a test on unseen code.
GROUP_OF_FAMILY = {
    "gemm_tile": "single_thread_gemm",
    "elementwise": "pointwise",
    "softmax": "row_reduction",
    "normalization": "row_reduction",
    "loss": "row_reduction",
    "reduction": "full_reduction",
    "scan": "prefix_scan",
    "transpose": "tile_transpose",
    "gather": "gather_scatter",
    "matmul": "tiled_gemm",
    "attention": "attention_block",
    "histogram": "histogram_bins",
}

#: Hand-written kernels whose template is not their family's (a matrix-vector
#: product filed under matmul is a GEMV, not a tiled GEMM).
GROUP_OF_ID = {"cuda_gemv_warp": "gemv"}

#: Selector prefix that names a group explicitly (``group:row_reduction``).
GROUP_PREFIX = "group:"


class CorpusError(Exception):
    """The corpus is missing or malformed, or a selector matches nothing."""


@dataclass(frozen=True)
class Param:
    """One ``.param`` of a kernel entry, in declaration order.

    ``role`` is input / output / inout (buffers: ``dtype`` + ``count``
    elements, base aligned to ``align`` bytes), scalar (``value``), or
    scratch (Triton's trailing pointers: ``count`` bytes, may be null when
    ``nullable``).  ``extra`` keeps optional fields such as ``range`` (values
    an input must be drawn from) or ``init`` ("zero").
    """

    name: str
    arg: str
    role: str
    dtype: str
    count: int | None = None
    value: int | float | None = None
    align: int | None = None
    nullable: bool = False
    extra: tuple[tuple[str, Any], ...] = ()

    @property
    def is_buffer(self) -> bool:
        return self.role != "scalar"

    @classmethod
    def from_json(cls, d: dict) -> "Param":
        known = {"name", "arg", "role", "dtype", "count", "value", "align", "nullable"}
        extra = tuple(sorted((k, _freeze(v)) for k, v in d.items() if k not in known))
        return cls(name=d["name"], arg=d.get("arg", d["name"]), role=d["role"], dtype=d["dtype"],
                   count=d.get("count"), value=d.get("value"), align=d.get("align"),
                   nullable=bool(d.get("nullable", False)), extra=extra)


@dataclass(frozen=True)
class Launch:
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    shared_bytes: int = 0  # dynamic shared memory to pass at launch

    @property
    def threads(self) -> int:
        g, b = self.grid, self.block
        return g[0] * g[1] * g[2] * b[0] * b[1] * b[2]


@dataclass(frozen=True)
class Performance:
    """The manifest's ``performance`` entry: the launch a user really runs.

    Kept as plain data here: the corpus sits below ``ptxopt.equivalence``
    (the pass manager reads corpus inputs and must reach none of it, see
    tests/project/test_import_contract.py), so the equivalence ``Launch`` with role
    ``performance`` is made from it there
    (:func:`ptxopt.equivalence.launch.performance_of`). Scalars are keyed by
    ``.param`` name, like the check launch's, and so are ``counts``, each
    buffer's element count at that problem size (what a GPU run of it
    allocates); ``problem`` says for people which problem the launch covers
    ("2^24 f32 elements").
    """

    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    shared_bytes: int = 0
    scalar_values: tuple[tuple[str, int | float], ...] = ()
    problem: str = ""
    counts: tuple[tuple[str, int], ...] = ()

    @property
    def scalars(self) -> dict[str, int | float]:
        return dict(self.scalar_values)

    @classmethod
    def from_json(cls, d: dict) -> "Performance":
        return cls(grid=tuple(d["grid"]), block=tuple(d["block"]), shared_bytes=int(d.get("shared_bytes", 0)),
                   scalar_values=tuple(d.get("scalars", {}).items()), problem=str(d.get("problem", "")),
                   counts=tuple((k, int(v)) for k, v in d.get("counts", {}).items()))

    def to_json(self) -> dict:
        """The manifest's ``performance`` object (inverse of :meth:`from_json`)."""
        out = {"grid": list(self.grid), "block": list(self.block), "shared_bytes": self.shared_bytes,
               "scalars": dict(self.scalar_values), "counts": dict(self.counts)}
        if self.problem:
            out["problem"] = self.problem
        return out


@dataclass(frozen=True)
class KernelSpec:
    """One corpus kernel: where its PTX is and how to launch it."""

    id: str
    family: str
    compiler: str
    path: str  # relative to the corpus root
    entry: str
    source: str
    generator: str
    arch: str
    ptx_version: str
    launch: Launch
    params: tuple[Param, ...]
    shape: tuple[tuple[str, Any], ...] = ()
    tags: tuple[str, ...] = ()
    root: Path = field(default=Path("."), compare=False, repr=False)
    #: scalar arguments (by ``arg`` name) the kernel was compiled assuming
    #: divisible by 16 (Triton's ``divisible_by_16``): a legal launch keeps them so
    divisible_by_16: tuple[str, ...] = ()
    #: the launch a user really runs (for the throughput estimate; never run
    #: by the interpreter), None when the manifest gives none (gemm_tile: its
    #: objective is one warp's latency). ``launch`` is the small *check*
    #: launch; the two are never interchanged. As an equivalence ``Launch``
    #: (role performance): :func:`ptxopt.equivalence.launch.performance_of`.
    performance: Performance | None = None
    #: template group (manifest ``group``; hand-written kernels: GROUP_OF_ID, else GROUP_OF_FAMILY)
    group: str = ""
    #: the template's runtime loops: bound argument, step, trip counts at the
    #: check and performance launches (generated kernels; empty otherwise)
    loops: tuple[tuple[tuple[str, Any], ...], ...] = ()

    @property
    def generated(self) -> bool:
        """One of the generated parametric families (``corpus/families/``)."""
        return self.path.startswith("families/")

    @property
    def ptx_path(self) -> Path:
        return self.root / self.path

    def ptx_text(self) -> str:
        """The kernel's PTX module text, exactly as committed."""
        try:
            return self.ptx_path.read_text()
        except OSError as exc:
            raise CorpusError(f"{self.id}: cannot read {self.ptx_path}: {exc}") from exc

    @property
    def shape_dict(self) -> dict[str, Any]:
        return dict(self.shape)

    def performance_spec(self) -> "KernelSpec | None":
        """This kernel at its performance size: the performance launch as
        ``launch``, every scalar's value and buffer's count at that size (for
        a GPU run of what users run, or the bytes it moves); None without a
        performance entry. Never for the interpreter: it is far too big."""
        perf = self.performance
        if perf is None:
            return None
        scalars, counts = perf.scalars, dict(perf.counts)
        params = tuple(replace(p, value=scalars.get(p.name, p.value)) if p.role == "scalar"
                       else replace(p, count=counts.get(p.name, p.count)) for p in self.params)
        return replace(self, launch=Launch(tuple(perf.grid), tuple(perf.block), perf.shared_bytes), params=params)

    @classmethod
    def from_json(cls, d: dict, root: Path) -> "KernelSpec":
        launch = d["launch"]
        perf = d.get("performance")
        if perf is not None:
            for what, names in (("scalars", {p["name"] for p in d["params"] if p.get("role") == "scalar"}),
                                ("counts", {p["name"] for p in d["params"] if p.get("role") != "scalar"})):
                stray = sorted(set(perf.get(what, {})) - names)
                if stray:
                    kind = "scalar" if what == "scalars" else "buffer"
                    raise CorpusError(f"{d['id']}: performance {what} {stray} are not {kind} parameters of "
                                      f"{d['entry']} ({', '.join(sorted(names)) or 'none'})")
        return cls(
            id=d["id"], family=d["family"], compiler=d["compiler"], path=d["path"], entry=d["entry"],
            source=d.get("source", ""), generator=d.get("generator", ""), arch=d["arch"],
            ptx_version=d["ptx_version"],
            launch=Launch(tuple(launch["grid"]), tuple(launch["block"]), int(launch.get("shared_bytes", 0))),
            params=tuple(Param.from_json(p) for p in d["params"]),
            shape=tuple((k, _freeze(v)) for k, v in d.get("shape", {}).items()),
            tags=tuple(d.get("tags", [])),
            root=root,
            divisible_by_16=tuple((d.get("triton") or {}).get("divisible_by_16", ())),
            performance=None if perf is None else Performance.from_json(perf),
            group=(d["group"] if "group" in d else  # written: kept as is (a JSON round trip is exact)
                   GROUP_OF_ID.get(d["id"]) or GROUP_OF_FAMILY.get(d["family"], d["family"])),
            loops=tuple(_freeze(loop) for loop in d.get("loops", ())),
        )


def _freeze(value):
    """Lists -> tuples so that specs stay hashable."""
    if isinstance(value, list):
        return tuple(_freeze(v) for v in value)
    if isinstance(value, dict):
        return tuple((k, _freeze(v)) for k, v in value.items())
    return value


#: where a wheel puts the corpus (setup.py maps ``corpus/`` to the package ``ptxopt._corpus``)
PACKAGED_CORPUS = Path(__file__).resolve().parent.parent / "_corpus"
#: where a source checkout (and an editable install) has it
CHECKOUT_CORPUS = Path(__file__).resolve().parent.parent.parent / "corpus"


def corpus_root() -> Path:
    """``$PTXOPT_CORPUS`` if set, else the installed package's copy, else
    ``<checkout>/corpus`` beside ``ptxopt/`` (also what errors name when
    neither has a manifest)."""
    env = os.environ.get("PTXOPT_CORPUS")
    if env:
        return Path(env).expanduser().resolve()
    if (PACKAGED_CORPUS / "manifest.json").is_file():
        return PACKAGED_CORPUS
    return CHECKOUT_CORPUS


def corpus_file(*parts: str) -> Path:
    """A file of the corpus by its path inside it (``policies/X.pt``,
    ``trajectories/greedy_sm_89.jsonl``): found the same way as the manifest."""
    return corpus_root().joinpath(*parts)


def committed_policy(name: str) -> Path | None:
    """The committed policy checkpoint called *name* (``gemm_elementwise_sm_89``
    or with ``.pt``) under ``corpus/policies``, or None: how ``search --policy``
    finds it in an installed package, where no checkout path exists."""
    if not name or "/" in name or os.sep in name:
        return None
    path = corpus_file("policies", name if name.endswith(".pt") else name + ".pt")
    return path if path.is_file() else None


def committed_policies() -> list[str]:
    """Names of the committed policy checkpoints (for messages)."""
    return sorted(p.stem for p in corpus_file("policies").glob("*.pt"))


#: manifest path -> ((mtime_ns, size), kernels): the generated families made
#: the manifest ~700 KB (40 ms to parse), and verification looks specs up per
#: candidate (ptxopt.equivalence.interpret.spec_for)
_LOADED: dict[Path, tuple[tuple[int, int], tuple[KernelSpec, ...]]] = {}


def load_manifest(root: Path | None = None) -> list[KernelSpec]:
    """All kernels of the manifest, in manifest order (a fresh list; parsed
    once per manifest file version)."""
    root = Path(root) if root is not None else corpus_root()
    path = root / "manifest.json"
    try:
        st = path.stat()
        stamp = (st.st_mtime_ns, st.st_size)
    except OSError:
        stamp = None
    hit = _LOADED.get(path)
    if stamp is not None and hit is not None and hit[0] == stamp:
        return list(hit[1])
    kernels = _parse_manifest(path, root)
    if stamp is not None:
        _LOADED[path] = (stamp, tuple(kernels))
    return kernels


def _parse_manifest(path: Path, root: Path) -> list[KernelSpec]:
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise CorpusError(f"no corpus manifest at {path} (set PTXOPT_CORPUS?)") from None
    except json.JSONDecodeError as exc:
        raise CorpusError(f"{path}: invalid JSON: {exc}") from exc
    if data.get("schema") != SCHEMA:
        raise CorpusError(f"{path}: schema {data.get('schema')!r}, expected {SCHEMA}")
    try:
        return [KernelSpec.from_json(k, root) for k in data["kernels"]]
    except (KeyError, TypeError) as exc:
        raise CorpusError(f"{path}: malformed kernel record: {exc!r}") from exc


def select(spec: str, kernels: list[KernelSpec] | None = None) -> list[KernelSpec]:
    """Kernels matching *spec*: ``all``, a kernel id, a family, a compiler,
    or a template group.

    Compilers accept the aliases in :data:`COMPILER_ALIASES` (``cuda`` is
    nvcc). A word that is an id, family or compiler means that (as before
    groups existed); otherwise a group name selects the group, and
    ``group:NAME`` always does. A comma-separated list selects the union,
    in manifest order. Raises :class:`CorpusError` naming the valid choices
    when nothing matches.
    """
    kernels = load_manifest() if kernels is None else kernels
    wanted = [s.strip() for s in spec.split(",") if s.strip()]
    if not wanted:
        raise CorpusError("empty corpus selector")
    chosen: set[str] = set()
    for word in wanted:
        if word == "all":
            hits = kernels
        elif word.startswith(GROUP_PREFIX):
            hits = [k for k in kernels if k.group == word[len(GROUP_PREFIX):]]
        else:
            compiler = COMPILER_ALIASES.get(word)
            hits = [k for k in kernels
                    if k.id == word or k.family == word or (compiler and k.compiler == compiler)]
            if not hits:
                hits = [k for k in kernels if k.group == word]
        if not hits:
            families = sorted({k.family for k in kernels})
            groups = sorted({k.group for k in kernels})
            compilers = sorted(COMPILER_ALIASES)
            raise CorpusError(
                f"unknown corpus selector {word!r}: use 'all', a kernel id, "
                f"a family ({', '.join(families)}), a group ({', '.join(groups)}; or group:NAME) "
                f"or a compiler ({', '.join(compilers)})")
        chosen.update(k.id for k in hits)
    return [k for k in kernels if k.id in chosen]


def get(kernel_id: str, kernels: list[KernelSpec] | None = None) -> KernelSpec:
    """The one kernel with this id."""
    kernels = load_manifest() if kernels is None else kernels
    for k in kernels:
        if k.id == kernel_id:
            return k
    raise CorpusError(f"no corpus kernel with id {kernel_id!r}")
