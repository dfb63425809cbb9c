"""The front end's contract, checked on one PTX text.

For input ``x`` and ``m = parse(x)``:

(a) ``parse(emit(m)) == m``  -- the IR survives printing;
(b) ptxas compiles ``emit(m)`` to the same SASS as ``x``, per architecture;
(c) ``emit`` is deterministic and idempotent: ``emit(parse(emit(m))) == emit(m)``.

``ptxopt roundtrip`` runs this over the corpus (the README's quick-start job),
and the test-suite runs it over the corpus and the front-end stress set.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field

from ptxopt.ptx.emit import emit
from ptxopt.ptx.parser import ParseError, parse


@dataclass
class ArchResult:
    arch: str
    status: str  # "same", "different", "rejected" (ptxas refuses the original), "error"
    detail: str = ""
    ptxas_version: str = ""
    ptxas_seconds: float = 0.0


@dataclass
class RoundTripResult:
    name: str
    lines: int = 0
    parse_seconds: float = 0.0
    ir_equal: bool = False
    idempotent: bool = False
    error: str = ""
    archs: list[ArchResult] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        if self.error or not (self.ir_equal and self.idempotent):
            return False
        return all(a.status in ("same", "rejected") for a in self.archs)

    def to_json(self) -> dict:
        d = asdict(self)
        d["ok"] = self.ok
        return d


def check_text(text: str, name: str = "<input>", archs: tuple[str, ...] = ()) -> RoundTripResult:
    """Check (a), (c) and, for each arch in ``archs``, (b)."""
    res = RoundTripResult(name, lines=text.count("\n") + 1)
    try:
        t0 = time.perf_counter()
        m = parse(text, name)
        res.parse_seconds = time.perf_counter() - t0
        printed = emit(m)
        m2 = parse(printed, name + " (printed)")
    except ParseError as e:
        res.error = str(e)
        return res
    res.ir_equal = m2 == m
    res.idempotent = emit(m2) == printed and emit(m) == printed
    for arch in archs:
        res.archs.append(compare_sass(text, printed, arch))
    return res


def compare_sass(original: str, printed: str, arch: str) -> ArchResult:
    """Compile both texts for ``arch`` and compare normalised SASS listings."""
    from ptxopt.toolchain import ToolchainError, compile_ptx, sass_text

    try:
        ref = compile_ptx(original, arch)
    except ToolchainError as e:
        return ArchResult(arch, "rejected", _first_line(e))
    try:
        new = compile_ptx(printed, arch)
    except ToolchainError as e:
        return ArchResult(arch, "error", "printed PTX rejected: " + _first_line(e), ref.ptxas_version)
    if new.cubin == ref.cubin:  # identical bytes: identical SASS, no nvdisasm (~200 ms) needed
        return ArchResult(arch, "same", "identical cubin", ref.ptxas_version, ref.wall_time_s)
    a, b = sass_text(ref.cubin), sass_text(new.cubin)
    if a == b:
        return ArchResult(arch, "same", "", ref.ptxas_version, ref.wall_time_s)
    return ArchResult(arch, "different", _first_diff(a, b), ref.ptxas_version, ref.wall_time_s)


def _first_line(e: Exception) -> str:
    return str(e).splitlines()[0] if str(e) else type(e).__name__


def _first_diff(a: str, b: str) -> str:
    la, lb = a.splitlines(), b.splitlines()
    for i, (x, y) in enumerate(zip(la, lb)):
        if x != y:
            return f"SASS line {i + 1}: {x.strip()!r} != {y.strip()!r}"
    return f"SASS lengths differ: {len(la)} vs {len(lb)} lines"
