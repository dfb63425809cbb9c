"""Estimated cycles (``sim`` backend) of every gemm_tile kernel under each single pass,
checked against the physically expected directions.

For every corpus kernel of family ``gemm_tile`` and every pass in
``ptxopt.passes.pass_names()`` the pass is applied alone (pipeline of one
pass), the result compiled with ptxas, disassembled and simulated with
:func:`ptxopt.sim.simulate`.  The expectations checked:

* ``maxnreg_32`` where it forces (more) spills -> slower than the original;
* ``vec_ld`` where it lowers the number of global load instructions -> not slower;
* ``cache_cg`` / ``cache_cv`` (L1-bypassing hints on data whose 32-byte
  sectors are read several times) -> slower.

The script is a report: it always exits 0, and prints mismatches plainly.
To save nvdisasm start-ups (~0.4 s each), all variants of one kernel are
compiled as one PTX module with renamed entries (ptxas compiles entries
independently); ``--no-batch`` compiles each variant alone instead, and the
baseline of every kernel is also compiled alone to check that batching does
not change its estimate.

Run: ``python benchmarks/reports/sim_report.py [--arch sm_89] [--kernels SELECTOR] [--jobs 2] [--json OUT]``.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field

EXPECTATIONS = ("maxnreg_32 spills -> slower", "vec_ld fewer LDG -> not slower",
                "cache_cg -> slower", "cache_cv -> slower")


@dataclass
class Variant:
    pass_name: str
    status: str  # "changed", "no-op", "illegal", "error", "skipped"
    cycles: float | None = None
    registers: int | None = None
    spill_bytes: int | None = None
    ldg: int | None = None  # global load instructions in the SASS
    sass: int | None = None
    detail: str = ""


@dataclass
class KernelReport:
    kernel: str
    shape: str
    variants: dict[str, Variant] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0
    sim_ms: float = 0.0  # simulate() time of the baseline


_ENTRY_RE = r"(\.entry\s+){name}(\s*\()"
_HEADER_RE = re.compile(r"^\s*\.(version|target|address_size)\b.*$", re.M)


def _rename_entry(text: str, entry: str, new: str) -> str:
    out, count = re.subn(_ENTRY_RE.format(name=re.escape(entry)), rf"\g<1>{new}\g<2>", text)
    if count != 1:
        raise ValueError(f"expected one .entry {entry} in the variant, found {count}")
    return out


def _measure(listing, compiled, entry: str, arch: str):
    from ptxopt.sim import simulate

    t0 = time.perf_counter()
    r = simulate(listing, compiled, kernel=entry, arch=arch)
    ms = (time.perf_counter() - t0) * 1e3
    body = listing.functions.get(entry, ())
    ldg = sum(1 for ins in body if ins.base_opcode == "LDG")
    res = compiled.kernels[entry]
    return r.cycles, res.registers, res.spill_bytes, ldg, len(body), ms


def run_kernel(kernel_id: str, arch: str, batch: bool) -> KernelReport:
    from ptxopt import emit, parse
    from ptxopt.kernels.corpus import get
    from ptxopt.passes import pass_names
    from ptxopt.passes.passmanager import PassManager
    from ptxopt.passes.pipeline import Pipeline
    from ptxopt.toolchain import ToolchainError, compile_ptx, disassemble

    t_start = time.perf_counter()
    spec = get(kernel_id)
    rep = KernelReport(kernel_id, "x".join(str(spec.shape_dict[k]) for k in ("m", "n", "k")))
    base_text = spec.ptx_text()
    module = parse(base_text, kernel_id)
    texts: dict[str, str] = {"base": base_text}
    rep.variants["base"] = Variant("base", "changed")
    for name in pass_names():
        try:
            pipeline = Pipeline.parse(name)
        except Exception as e:  # a pass module that does not import yet
            rep.variants[name] = Variant(name, "skipped", detail=f"{type(e).__name__}: {e}")
            continue
        try:
            result = PassManager(pipeline).run(module)
        except Exception as e:
            rep.variants[name] = Variant(name, "error", detail=f"{type(e).__name__}: {e}")
            continue
        skipped = [r.skipped for r in result.records if r.skipped]
        if skipped:
            rep.variants[name] = Variant(name, "illegal", detail=skipped[0])
        elif not result.changed:
            rep.variants[name] = Variant(name, "no-op")
        else:
            rep.variants[name] = Variant(name, "changed")
            texts[name] = emit(result.module)

    entry = spec.entry
    measured: dict[str, tuple] = {}
    if batch:
        names = list(texts)
        header = "\n".join(m.group(0) for m in _HEADER_RE.finditer(base_text))
        parts = [header]
        for name in names:
            body = _HEADER_RE.sub("", texts[name])
            parts.append(_rename_entry(body, entry, f"{entry}__{name}"))
        combined = "\n".join(parts)
        try:
            compiled = compile_ptx(combined, arch)
            listing = disassemble(compiled.cubin)
            for name in names:
                measured[name] = _measure(listing, compiled, f"{entry}__{name}", arch)
        except (ToolchainError, ValueError, KeyError) as e:
            rep.notes.append(f"batched compile failed ({type(e).__name__}: {str(e).splitlines()[0]}); "
                             "compiling variants one by one")
            measured.clear()
    for name, text in texts.items():
        if name in measured and name != "base":
            continue
        try:
            compiled = compile_ptx(text, arch)
            listing = disassemble(compiled.cubin)
            solo = _measure(listing, compiled, entry, arch)
        except ToolchainError as e:
            rep.variants[name].status = "error"
            rep.variants[name].detail = str(e).splitlines()[0]
            continue
        if name == "base" and name in measured and measured[name][:5] != solo[:5]:
            rep.notes.append(f"batched baseline differs from the solo compile: {measured[name][:5]} vs "
                             f"{solo[:5]}; using solo numbers for the baseline")
        measured[name] = solo
    for name, (cycles, regs, spills, ldg, sass, ms) in measured.items():
        v = rep.variants[name]
        v.cycles, v.registers, v.spill_bytes, v.ldg, v.sass = cycles, regs, spills, ldg, sass
        if name == "base":
            rep.sim_ms = ms
    base = rep.variants["base"]
    for v in rep.variants.values():
        if v.status == "no-op":
            v.cycles, v.registers, v.spill_bytes, v.ldg, v.sass = (base.cycles, base.registers,
                                                                   base.spill_bytes, base.ldg, base.sass)
    rep.seconds = time.perf_counter() - t_start
    return rep


def check(rep: KernelReport) -> dict[str, tuple[bool, str] | None]:
    """Each expectation -> (agrees, detail), or None when it does not apply to this kernel."""
    base = rep.variants["base"]
    out: dict[str, tuple[bool, str] | None] = dict.fromkeys(EXPECTATIONS)
    if base.cycles is None:
        return out

    def pct(v) -> str:
        return f" ({100 * (v.cycles / base.cycles - 1):+.1f}%)"

    def usable(name):
        v = rep.variants.get(name)
        return v if v is not None and v.status == "changed" and v.cycles is not None else None

    if (v := usable("maxnreg_32")) and (v.spill_bytes or 0) > (base.spill_bytes or 0):
        out[EXPECTATIONS[0]] = (v.cycles > base.cycles,
                                f"spills {base.spill_bytes}->{v.spill_bytes} B, "
                                f"cycles {base.cycles:g}->{v.cycles:g}" + pct(v))
    if (v := usable("vec_ld")) and v.ldg is not None and base.ldg is not None and v.ldg < base.ldg:
        out[EXPECTATIONS[1]] = (v.cycles <= base.cycles,
                                f"LDG {base.ldg}->{v.ldg}, regs {base.registers}->{v.registers}, "
                                f"spills {base.spill_bytes}->{v.spill_bytes} B, "
                                f"cycles {base.cycles:g}->{v.cycles:g}" + pct(v))
    for i, name in ((2, "cache_cg"), (3, "cache_cv")):
        if v := usable(name):
            out[EXPECTATIONS[i]] = (v.cycles > base.cycles,
                                    f"regs {base.registers}->{v.registers}, spills {base.spill_bytes}->"
                                    f"{v.spill_bytes} B, cycles {base.cycles:g}->{v.cycles:g}" + pct(v))
    return out


def main() -> int:
    from ptxopt.toolchain.arch import DEFAULT_ARCH

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--arch", default=DEFAULT_ARCH)
    ap.add_argument("--kernels", default="gemm_tile", help="corpus selector (default: gemm_tile)")
    ap.add_argument("--jobs", type=int, default=2, help="worker processes (default 2)")
    ap.add_argument("--no-batch", action="store_true", help="compile every variant alone")
    ap.add_argument("--json", metavar="OUT", help="write every measurement as JSON")
    args = ap.parse_args()

    from ptxopt.kernels.corpus import select
    from ptxopt.passes import pass_names

    kernels = [k.id for k in select(args.kernels) if k.family == "gemm_tile"]
    t0 = time.perf_counter()
    with ProcessPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        reports = list(pool.map(run_kernel, kernels, [args.arch] * len(kernels),
                                [not args.no_batch] * len(kernels)))
    wall = time.perf_counter() - t0
    reports.sort(key=lambda r: tuple(int(x) for x in r.shape.split("x")))

    passes = pass_names()
    short = {n: n.replace("maxnreg_", "mr").replace("reorder_", "ro_").replace("prefetch_", "pf_")
             .replace("st_cache_", "st_").replace("cache_", "c_") for n in passes}
    print(f"sim backend, {args.arch}: estimated cycles of the original, and variant/original ratio per pass "
          "('=' no change, '!' illegal, 'E' error, '-' pass missing)")
    head = f"{'kernel':>9} {'base':>8} " + " ".join(f"{short[n]:>6}" for n in passes)
    print(head)
    for rep in reports:
        base = rep.variants["base"]
        cells = []
        for n in passes:
            v = rep.variants.get(n)
            if v is None or v.status == "skipped":
                cells.append(f"{'-':>6}")
            elif v.status == "no-op":
                cells.append(f"{'=':>6}")
            elif v.status == "illegal":
                cells.append(f"{'!':>6}")
            elif v.cycles is None or base.cycles is None:
                cells.append(f"{'E':>6}")
            else:
                cells.append(f"{v.cycles / base.cycles:6.3f}")
        b = f"{base.cycles:8.0f}" if base.cycles is not None else f"{'E':>8}"
        print(f"{rep.shape:>9} {b} " + " ".join(cells))

    geo = []
    for n in passes:
        ratios = [r.variants[n].cycles / r.variants["base"].cycles for r in reports
                  if n in r.variants and r.variants[n].status in ("changed", "no-op")
                  and r.variants[n].cycles and r.variants["base"].cycles]
        geo.append(f"{math.exp(sum(map(math.log, ratios)) / len(ratios)):6.3f}" if ratios else f"{'-':>6}")
    print(f"{'geomean':>9} {'':>8} " + " ".join(geo))

    skipped = sorted({(n, v.detail) for r in reports for n, v in r.variants.items() if v.status == "skipped"})
    for n, why in skipped:
        print(f"note: pass {n} skipped (does not load: {why})")
    errors = [(r.kernel, n, v.detail) for r in reports for n, v in r.variants.items() if v.status == "error"]
    for k, n, why in errors:
        print(f"note: {n} on {k} failed: {why}")
    for r in reports:
        for note in r.notes:
            print(f"note: {r.kernel}: {note}")

    print("\nexpected directions:")
    for exp in EXPECTATIONS:
        results = [(r, check(r)[exp]) for r in reports]
        applicable = [(r, res) for r, res in results if res is not None]
        agree = sum(1 for _, res in applicable if res[0])
        print(f"  {exp:32s} agree {agree:3d} / {len(applicable):3d} applicable kernels")
        for r, res in applicable:
            if not res[0]:
                print(f"    MISMATCH {r.kernel}: {res[1]}")

    sim_ms = [r.sim_ms for r in reports if r.sim_ms]
    big = max(reports, key=lambda r: r.variants["base"].sass or 0)
    print(f"\nsimulate() time per kernel: max {max(sim_ms):.1f} ms ({big.kernel}: {big.sim_ms:.1f} ms, "
          f"{big.variants['base'].sass} SASS instructions); report wall time {wall:.0f} s "
          f"with {args.jobs} worker(s)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump([{**asdict(r), "checks": {k: v for k, v in check(r).items()}} for r in reports], f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
