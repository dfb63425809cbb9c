"""One launch value: how a kernel entry is run, where that came from, and what for.

A kernel's behaviour depends on its launch: grid and block, dynamic shared
memory, the value of each scalar argument and the buffers behind its
pointers. ptxopt needs launches for two different questions and keeps them
apart by :class:`Role`:

* ``check``: a small launch on which the interpreter compares the original
  and the rewritten kernel (:func:`ptxopt.equivalence.decision`);
* ``performance``: the launch the user really runs, for which time is
  estimated (a throughput objective needs its grid, block and shared memory).

Every launch also says where it came from (:class:`Origin`), because that
decides how much a verdict reached on it can be trusted (:data:`CEILING`):
an ``equal`` on a launch nobody gave (``guessed``) says nothing about the
launches the kernel really gets, so it is never reported as ``equal``.

``buffers`` is how pointer parameters are backed: ``None`` gives each one
``buffer_bytes`` of seeded random data (``default`` buffers); a
``manifest``-shaped description (:class:`ptxopt.kernels.corpus.KernelSpec`, from the
corpus or a contract file that describes every parameter) allocates each
buffer exactly as described (``exact`` buffers).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import Enum
from typing import Any

from ptxopt.equivalence.verdict import Verdict


class ContractError(ValueError):
    """A malformed launch contract (file or option), or one that does not fit the entry."""


class Origin(str, Enum):
    """Where a launch came from, most to least authoritative."""

    MANIFEST = "manifest"    # the corpus manifest entry of the kernel
    CONTRACT = "contract"    # a contract file (KERNEL.contract.json, --contract, a caller's object)
    OPTIONS = "options"      # command-line options / keyword arguments alone (--grid, --block, ...)
    TRITON = "triton"        # Triton's own metadata (threads, shared bytes, signature)
    INFERRED = "inferred"    # derived from the PTX (.reqntid/.maxntid, parameter use): safe, not given
    GUESSED = "guessed"      # nothing known: one block of one thread, default arguments

    __str__ = str.__str__
    __format__ = str.__format__


class Role(str, Enum):
    CHECK = "check"              # equivalence checking in the interpreter
    PERFORMANCE = "performance"  # what the user runs: the throughput estimate's launch

    __str__ = str.__str__
    __format__ = str.__format__


#: The strongest verdict an *interpreter run* on a launch of this origin may
#: support. Verdicts that need no launch (identical, hints-only, proved) and
#: counterexamples (differ) are not limited. ``inferred`` supports ``equal``
#: only when every output byte and every changed instruction was covered
#: (:func:`ceiling`); ``guessed`` never does.
CEILING = {
    Origin.MANIFEST: Verdict.EQUAL,
    Origin.CONTRACT: Verdict.EQUAL,
    Origin.OPTIONS: Verdict.EQUAL,
    Origin.TRITON: Verdict.EQUAL,
    Origin.INFERRED: Verdict.EQUAL,  # conditional: see ceiling()
    Origin.GUESSED: Verdict.INCONCLUSIVE,
}


def ceiling(verdict: Verdict, launch: "Launch", *, fully_covered: bool) -> tuple[Verdict, str]:
    """``verdict`` (an interpreter's) limited by what ``launch``'s origin can
    support, with the reason when it was lowered (else "")."""
    verdict = Verdict(verdict)
    conditional = launch.origin is Origin.INFERRED and verdict is Verdict.EQUAL and not fully_covered
    if verdict is Verdict.DIFFER or (verdict.rank <= CEILING[launch.origin].rank and not conditional):
        return verdict, ""
    if launch.origin is Origin.GUESSED:
        return Verdict.INCONCLUSIVE, ("inconclusive (guessed launch): no contract, manifest entry or "
                                      "metadata gives this kernel's launch, so its runs prove nothing about "
                                      "the real ones; give --grid/--block/--scalar or a contract file")
    return Verdict.INCONCLUSIVE, ("inconclusive (inferred launch): not every output byte and changed "
                                  "instruction was covered")


def _dims(t) -> str:
    return "x".join(str(int(v)) for v in t)


@dataclass(frozen=True)
class Launch:
    """How one entry (``entry`` None: any entry) is launched.

    ``source`` names where it came from for people (a file, ``options``,
    ``corpus:ID``); ``params`` lists the parameter names a contract file
    describes (checked against the entry by :meth:`fit`). ``grid`` None
    means the grid is unknown (Triton metadata, ``--perf-block`` alone): only
    a performance launch may say so, and the throughput estimate then
    assumes full waves and labels it; the interpreter never runs one."""

    grid: tuple[int, int, int] | None = (1, 1, 1)  # None: unknown (performance launches only)
    block: tuple[int, int, int] = (1, 1, 1)
    shared_bytes: int = 0
    scalars: dict = field(default_factory=dict, hash=False)
    origin: Origin = Origin.GUESSED
    role: Role = Role.CHECK
    source: str = "guess"
    entry: str | None = None
    params: tuple[str, ...] = ()
    buffer_bytes: int = 65536
    int_scalar: int | None = None  # the value every unnamed integer scalar gets (default buffers only)
    #: performance launches: distinct global bytes the launch touches (the DRAM roofline); None: unknown
    footprint_bytes: int | None = None
    #: exact buffers: every parameter described (a corpus KernelSpec or a complete contract file); None: default
    buffers: Any = field(default=None, hash=False, compare=False, repr=False)

    def __post_init__(self):
        if self.grid is None:
            # an unknown grid (Triton metadata, --perf-block alone): only a
            # performance launch may lack one -- the estimate then assumes
            # full waves and says so; the interpreter needs every block
            if Role(self.role) is not Role.PERFORMANCE:
                raise ValueError("only a performance launch may leave its grid unknown (grid=None)")
        else:
            object.__setattr__(self, "grid", tuple(int(v) for v in self.grid))
        object.__setattr__(self, "block", tuple(int(v) for v in self.block))
        object.__setattr__(self, "origin", Origin(self.origin))
        object.__setattr__(self, "role", Role(self.role))

    # -- what it is -------------------------------------------------------------
    @property
    def guessed(self) -> bool:
        return self.origin is Origin.GUESSED

    @property
    def exact(self) -> bool:
        """Buffers allocated exactly as described (else default buffers)."""
        return self.buffers is not None

    @property
    def threads_per_block(self) -> int:
        return self.block[0] * self.block[1] * self.block[2]

    @property
    def blocks(self) -> int | None:
        """Blocks in the grid; None when the grid is unknown."""
        if self.grid is None:
            return None
        return self.grid[0] * self.grid[1] * self.grid[2]

    def describe(self) -> str:
        """``grid 4x1x1, block 128x1x1, 0 B dynamic shared, n=512 (from k.contract.json)``;
        a performance launch says so, and ``grid unknown`` when it has none."""
        text = "grid unknown" if self.grid is None else f"grid {_dims(self.grid)}"
        if self.role is Role.PERFORMANCE:
            text = "performance launch: " + text
        text += f", block {_dims(self.block)}, {self.shared_bytes} B dynamic shared"
        if self.scalars:
            text += ", " + ", ".join(f"{k}={v}" for k, v in self.scalars.items())
        if self.guessed:
            return text + " (guessed: no contract given and no corpus kernel matches)"
        if self.origin is Origin.INFERRED:
            return text + f" (inferred from {self.source})"
        return text + f" (from {self.source})"

    def to_json(self) -> dict:
        return {"source": self.source, "origin": self.origin.value, "role": self.role.value,
                "guessed": self.guessed, "grid": None if self.grid is None else list(self.grid),
                "block": list(self.block),
                "shared_bytes": self.shared_bytes, "scalars": dict(self.scalars),
                "buffers": "exact" if self.exact else "default"}

    def key(self) -> str:
        """What cache keys record of the launch (every field that changes a result)."""
        if self.buffers is not None:
            spec = self.buffers
            base = f"{spec.id}:{[p for p in spec.params]}"
        else:
            base = f"default:{self.buffer_bytes}:{self.int_scalar}"
        return (f"{self.role.value}:{self.origin.value}:{self.grid}:{self.block}:{self.shared_bytes}:"
                f"{sorted(self.scalars.items())}:{base}" + (f":fp{self.footprint_bytes}" if self.footprint_bytes else ""))

    # -- derived launches -------------------------------------------------------
    def with_entry(self, entry: str) -> "Launch":
        return replace(self, entry=entry)

    def fit(self, param_names) -> "Launch":
        """This launch for an entry with these parameters: exact buffers only
        when the description covers every parameter, in order; else default
        buffers. A parameter the entry does not have (described, or a scalar
        given by an option) is a :class:`ContractError`."""
        names = list(param_names)
        described = list(self.params) + [n for n in self.scalars if n not in self.params]
        unknown = [n for n in described if n not in names]
        if unknown:
            raise ContractError(f"contract from {self.source}: {self.entry or 'the entry'} has no "
                                f"parameter {', '.join(unknown)} (its parameters: {', '.join(names)})")
        if self.buffers is None or list(self.params) == names:
            return self
        return replace(self, buffers=None)

    # -- what the interpreter takes ---------------------------------------------
    def interp_kwargs(self) -> dict:
        """``{"spec": KernelSpec}`` (exact buffers, this launch's grid, block,
        shared bytes and scalars) or ``{"geometry": Geometry}`` (default
        buffers) for :func:`ptxopt.equivalence.interpret.verify`."""
        if self.grid is None:
            raise ContractError(f"the launch from {self.source} has no grid; the interpreter needs one")
        if self.buffers is not None:
            spec = self.buffers
            launch = replace(spec.launch, grid=self.grid, block=self.block, shared_bytes=self.shared_bytes)
            params = tuple(replace(p, value=self.scalars[p.name])
                           if p.role == "scalar" and p.name in self.scalars else p for p in spec.params)
            return {"spec": replace(spec, launch=launch, params=params)}
        from ptxopt.equivalence.interpret import Geometry

        return {"geometry": Geometry(grid=self.grid, block=self.block, shared_bytes=self.shared_bytes,
                                     buffer_bytes=self.buffer_bytes, scalars=dict(self.scalars),
                                     int_scalar=self.int_scalar)}


def from_spec(spec, role: Role = Role.CHECK) -> Launch:
    """The launch of a corpus manifest entry (exact buffers)."""
    sc = {p.name: p.value for p in spec.params if p.role == "scalar"}
    return Launch(tuple(spec.launch.grid), tuple(spec.launch.block), int(spec.launch.shared_bytes), sc,
                  origin=Origin.MANIFEST if spec.path else Origin.CONTRACT, role=role,
                  source=f"corpus:{spec.id}" if spec.path else (spec.source or spec.id), entry=spec.entry,
                  params=tuple(p.name for p in spec.params), buffers=spec)


def performance_of(spec) -> "Launch | None":
    """The performance launch of a corpus manifest entry (``spec.performance``,
    the launch a user runs: role ``performance``, origin ``manifest``), None
    when the entry gives none (gemm_tile kernels)."""
    perf = getattr(spec, "performance", None)
    if perf is None:
        return None
    return Launch(tuple(perf.grid), tuple(perf.block), int(perf.shared_bytes), perf.scalars,
                  origin=Origin.MANIFEST if spec.path else Origin.CONTRACT, role=Role.PERFORMANCE,
                  source=f"corpus:{spec.id} performance" if spec.path else f"{spec.source or spec.id} performance",
                  entry=spec.entry)


def from_geometry(geometry, origin: Origin = Origin.CONTRACT, source: str = "caller",
                  role: Role = Role.CHECK) -> Launch:
    """A launch from an interpreter :class:`~ptxopt.equivalence.interpret.Geometry` (default buffers)."""
    return Launch(tuple(geometry.grid), tuple(geometry.block), int(geometry.shared_bytes), dict(geometry.scalars),
                  origin=origin, role=role, source=source, buffer_bytes=geometry.buffer_bytes,
                  int_scalar=geometry.int_scalar)


def guessed(entry: str | None = None) -> Launch:
    """Nothing known: one block of one thread, default arguments."""
    return Launch(entry=entry)


def as_launch(obj, source: str = "caller") -> "Launch | None":
    """A :class:`Launch` from a Launch, an interpreter Geometry or a corpus KernelSpec (None stays None)."""
    from ptxopt.kernels.corpus import KernelSpec
    from ptxopt.equivalence.interpret import Geometry

    if obj is None or isinstance(obj, Launch):
        return obj
    if isinstance(obj, Geometry):
        return from_geometry(obj, source=source)
    if isinstance(obj, KernelSpec):
        return from_spec(obj)
    raise TypeError(f"expected a Launch, Geometry or KernelSpec, got {type(obj).__name__}")


__all__ = ["ContractError", "Launch", "Origin", "Role", "CEILING", "ceiling", "from_spec", "from_geometry", "guessed",
           "as_launch", "performance_of"]
