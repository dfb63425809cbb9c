"""Measure the corpus on this machine's GPU: every kernel's baseline and every
single-pass variant; optionally compare the ``sim`` model's ranking with it.

A calibration script like ``benchmarks/reports/sim_calibration.py`` (it runs the
pass manager, the sim model and the GPU harness together, so it lives above
all three, not inside :mod:`ptxopt.gpu`). Usage, from the repository root::

    python benchmarks/reports/gpu_measure_corpus.py [--out corpus/measurements/<gpu>.json]
        [--kernels gemm_tile] [--passes all|vec_ld,maxnreg_32,...]
        [--warmup 50] [--repeats 200] [--seed 0] [--timeout 300] [--resume]
        [--samples] [--compare-sim] [--sim-arch sm_90]
    python benchmarks/reports/gpu_measure_corpus.py --input FILE.json --compare-sim   # no GPU needed

Exit status: 0 done; 2 no GPU (``no GPU: <reason>`` on stderr) or bad
arguments; 1 an input file that cannot be read.

Each pipeline is one named pass (:func:`ptxopt.passes.pass_names`), applied
with :class:`ptxopt.passes.passmanager.PassManager` to the committed PTX. A pass
that is illegal for the kernel is recorded as ``illegal``; one that changes
nothing, or yields PTX identical to an earlier pipeline's, is not measured
again (``changed: false`` / ``same_as``) and carries that pipeline's
figures. Every measured variant is compared bit for bit with the baseline's
outputs on the GPU (:func:`ptxopt.gpu.measure_on_gpu`); a variant that
differs is a ``mismatch``. The file is rewritten after every kernel, so an
interrupted run keeps what it measured and ``--resume`` continues it
(re-measuring only ``timeout``/``crash``/``error``/``unavailable`` records).

Output schema (``"schema": 1``, ``"kind": "ptxopt-gpu-measurements"``)::

    {
      "schema": 1, "kind": "ptxopt-gpu-measurements",
      "created": ISO-8601, "updated": ISO-8601, "ptxopt_version": "0.1.0",
      "gpu": {"device": "NVIDIA H100 80GB HBM3", "compute_capability": "9.0", "arch": "sm_90",
              "driver_version": 12040, "driver": "12.4", "runtime_version": 12090, "cuda_runtime": "12.9",
              "cupy_version": "13.4.1", "sm_count": 132, "clock_rate_khz": 1980000 | null},
      "toolchain": {"ptxas": {"12.9": "12.9.86", "13.5": "13.5.37"}, "nvdisasm": "13.5.37",
                    "ptxas_used": ["12.9"]},
      "settings": {"warmup": 50, "repeats": 200, "seed": 0, "flavours": ["random", "edge"],
                   "timeout_s": 300, "kernels": "gemm_tile", "pipelines": ["baseline", "vec_ld", ...],
                   "cycles": "...", "wall": "..."},
      "kernels": {
        "gemm_tile_2x2x2": {
          "baseline": {
            "status": "ok", "message": "", "changed": true,
            "cycles_median": 412.0, "cycles_iqr": 1.0, "cycles_p25": 412.0, "cycles_p75": 413.0,
            "cycles_min": 411.0, "cycles_max": 530.0, "cycles_mean": 414.2, "thread_cycles_median": 412.0,
            "wall_us_median": 4.1, "wall_us_iqr": 0.2, "wall_us_min": 3.9, "wall_us_max": 7.5,
            "registers": 18, "spill_store_bytes": 0, "spill_load_bytes": 0, "spill_bytes": 0,
            "instrumented_registers": 20, "instrumented_spill_bytes": 0,
            "ptxas_version": "12.9", "arch": "sm_90", "load_path": "cubin",
            "compared": true, "nondeterministic": [], "mismatch": null,
            "samples": [...]                       # only with --samples
          },
          "vec_ld": {...},                         # same fields
          "cache_cv": {"status": "ok", "changed": false, "same_as": "baseline", ...baseline figures},
          "maxnreg_32": {"status": "illegal", "message": "illegal: ...", "changed": false}
        }
      },
      "sim_comparison": {...}                      # with --compare-sim: see compare_sim()
    }

``status`` is a :class:`~ptxopt.gpu.measurement.GpuMeasurement` status, or
``illegal`` (the pass refused the kernel). Cycles are ``%clock64``
differences in SM cycles (per launch the maximum over threads; median and
spread over the timed launches); wall times are CUDA-event intervals in µs
and include launch latency.

``--compare-sim`` estimates every measured variant with
:func:`ptxopt.sim.estimate` (architecture: the GPU's if the model has a
table for it, else ``--sim-arch``/``sm_89``) and prints Spearman rank
correlations (numpy; average ranks for ties): over all (kernel, pipeline)
pairs, and per kernel across its pipelines (mean and median over kernels),
plus how often the model and the GPU agree on the *direction* of each
pass's effect relative to the baseline. Variants that were not measured
separately (``changed: false`` or ``same_as``) are left out, so duplicates
cannot inflate the correlation.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import hashlib
import json
import os
import signal
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from ptxopt.toolchain.arch import DEFAULT_ARCH

SCHEMA = 1
KIND = "ptxopt-gpu-measurements"
RETRY_STATUSES = ("timeout", "crash", "error", "unavailable")
EXIT_NO_GPU = 2

_CYCLES_DOC = ("%clock64 end - start per thread (read at kernel entry and before every exit); per launch the "
               "maximum over threads; median/IQR/min/max over the timed launches")
_WALL_DOC = "CUDA events around each timed launch of the instrumented kernel, microseconds, launch latency included"


# ---------------------------------------------------------------------------
# Spearman (numpy only)
# ---------------------------------------------------------------------------


def rankdata(x) -> np.ndarray:
    """Ranks 1..n, ties get the average of the ranks they span."""
    x = np.asarray(x, dtype=np.float64)
    n = x.size
    order = np.argsort(x, kind="mergesort")
    ranks = np.empty(n, dtype=np.float64)
    ranks[order] = np.arange(1, n + 1, dtype=np.float64)
    _, inv, counts = np.unique(x, return_inverse=True, return_counts=True)
    sums = np.bincount(inv, weights=ranks)
    return (sums / counts)[inv]


def spearman(a, b) -> float:
    """Spearman's rank correlation; NaN for fewer than 2 points or a constant side."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if a.shape != b.shape:
        raise ValueError("spearman: inputs differ in length")
    if a.size < 2:
        return float("nan")
    ra, rb = rankdata(a), rankdata(b)
    if ra.std() == 0 or rb.std() == 0:
        return float("nan")
    return float(np.corrcoef(ra, rb)[0, 1])


# ---------------------------------------------------------------------------
# Records
# ---------------------------------------------------------------------------


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat()


def _cuda_version(v) -> str | None:
    if not v:
        return None
    v = int(v)
    return f"{v // 1000}.{(v % 1000) // 10}"


def slug(name: str) -> str:
    s = "".join(c.lower() if c.isalnum() else "-" for c in name).strip("-")
    while "--" in s:
        s = s.replace("--", "-")
    return s or "gpu"


def record(m, *, samples: bool = False) -> dict:
    """A measurement's JSON record (the schema above)."""
    d = {
        "status": m.status, "message": m.message, "changed": True,
        "cycles_median": m.cycles, "cycles_iqr": m.cycles_iqr, "cycles_p25": m.cycles_p25,
        "cycles_p75": m.cycles_p75, "cycles_min": m.cycles_min, "cycles_max": m.cycles_max,
        "cycles_mean": m.cycles_mean, "thread_cycles_median": m.thread_cycles_median,
        "wall_us_median": m.wall_us, "wall_us_iqr": m.wall_us_iqr, "wall_us_min": m.wall_us_min,
        "wall_us_max": m.wall_us_max,
        "registers": m.registers, "spill_store_bytes": m.spill_store_bytes, "spill_load_bytes": m.spill_load_bytes,
        "spill_bytes": m.spill_bytes, "instrumented_registers": m.instrumented_registers,
        "instrumented_spill_bytes": m.instrumented_spill_bytes, "ptxas_version": m.ptxas_version, "arch": m.arch,
        "load_path": m.load_path, "compared": m.compared, "nondeterministic": list(m.nondeterministic),
        "mismatch": m.mismatch, "seconds": round(m.seconds, 4),
    }
    if samples:
        d["samples"] = list(m.samples)
    return d


def _write(path: Path, data: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=False) + "\n")
    os.replace(tmp, path)


def variant_text(base_text: str, module, pipeline: str):
    """``(text, status, message)``: the PTX of ``pipeline`` applied to the
    kernel, or why there is none (``illegal``, ``unchanged``, ``error``)."""
    from ptxopt.ptx.emit import emit
    from ptxopt.passes.passmanager import PassFailure, PassManager

    if pipeline == "baseline":
        return base_text, "ok", ""
    try:
        rr = PassManager(pipeline).run(module)
    except PassFailure as e:
        return None, "error", f"the pass failed: {e}"
    rec = rr.records[0] if rr.records else None
    if rec is not None and rec.skipped:
        return None, "illegal", rec.skipped
    if not rr.changed:
        return None, "unchanged", ""
    return emit(rr.module), "ok", ""


def measure_corpus(data: dict, kernels, pipelines, *, warmup: int, repeats: int, seed: int, timeout: float,
                   out: Path | None, resume: bool = False, samples: bool = False, worker=None,
                   log=sys.stderr) -> dict:
    from ptxopt.gpu.worker import GpuWorker
    from ptxopt.ptx.parser import parse

    own = worker is None
    worker = worker or GpuWorker()
    used = set(data.setdefault("toolchain", {}).get("ptxas_used", []))
    try:
        for spec in kernels:
            base_text = spec.ptx_text()
            module = parse(base_text, f"corpus:{spec.id}")
            entry = data["kernels"].setdefault(spec.id, {})
            by_text: dict[str, str] = {}
            for pl in pipelines:
                old = entry.get(pl)
                text, status, message = variant_text(base_text, module, pl)
                digest = hashlib.sha256(text.encode()).hexdigest() if text is not None else None
                if resume and old is not None and old.get("status") not in RETRY_STATUSES:
                    if digest is not None and old.get("changed", True) and not old.get("same_as"):
                        by_text.setdefault(digest, pl)
                    continue
                if status == "illegal" or status == "error":
                    entry[pl] = {"status": status, "message": message, "changed": False}
                    continue
                if status == "unchanged":
                    base = entry.get("baseline", {})
                    entry[pl] = {**base, "changed": False, "same_as": "baseline",
                                 "message": "the pass changed nothing"}
                    continue
                if digest in by_text:
                    same = by_text[digest]
                    entry[pl] = {**entry[same], "changed": True, "same_as": same,
                                 "message": f"PTX identical to {same}'s"}
                    continue
                m = worker.measure(text, spec, reference_ptx=base_text, warmup=warmup, repeats=repeats,
                                   seed=seed, timeout=timeout)
                entry[pl] = record(m, samples=samples)
                if m.ok:
                    by_text[digest] = pl
                if m.ptxas_version:
                    used.add(m.ptxas_version)
            data["toolchain"]["ptxas_used"] = sorted(used)
            data["updated"] = _now()
            base = entry.get("baseline", {})
            best = min(((r.get("cycles_median"), p) for p, r in entry.items()
                        if r.get("status") == "ok" and r.get("cycles_median") is not None), default=(None, None))
            failed = sorted(p for p, r in entry.items() if r.get("status") not in ("ok", "illegal"))
            print(f"{spec.id}: baseline {base.get('cycles_median')} cycles ({base.get('status')}); best {best[1]} "
                  f"{best[0]}" + (f"; not ok: {', '.join(failed)}" if failed else ""), file=log, flush=True)
            if out is not None:
                _write(out, data)
    finally:
        if own:
            worker.close()
    return data


# ---------------------------------------------------------------------------
# sim vs GPU
# ---------------------------------------------------------------------------


def compare_sim(data: dict, *, arch: str | None = None, log=sys.stderr) -> dict:
    """Spearman correlations between the ``sim`` estimates and the measured
    median cycles (see the module doc)."""
    from ptxopt.kernels.corpus import CorpusError, get
    from ptxopt.ptx.parser import parse
    from ptxopt.sim import LATENCIES, estimate
    from ptxopt.toolchain import ToolchainError

    gpu_arch = (data.get("gpu") or {}).get("arch")
    if arch is None:
        arch = gpu_arch if gpu_arch in LATENCIES else DEFAULT_ARCH
    notes = []
    if gpu_arch and arch != gpu_arch:
        notes.append(f"the sim model has no table for {gpu_arch}; estimated for {arch}")
    pairs = []  # (kernel, pipeline, measured, estimated)
    skipped = 0
    for kid, entries in sorted(data.get("kernels", {}).items()):
        try:
            spec = get(kid)
        except CorpusError:
            notes.append(f"{kid}: not in this corpus; skipped")
            continue
        base_text = spec.ptx_text()
        module = parse(base_text, f"corpus:{kid}")
        for pl, rec in entries.items():
            if rec.get("status") != "ok" or rec.get("cycles_median") is None:
                continue
            if pl != "baseline" and (not rec.get("changed", True) or rec.get("same_as")):
                continue
            text, status, message = variant_text(base_text, module, pl)
            if text is None:
                skipped += 1
                notes.append(f"{kid}/{pl}: measured, but the pass now gives {status} {message}".strip())
                continue
            try:
                est = estimate(text, arch).cycles
            except (ToolchainError, ValueError) as e:
                skipped += 1
                notes.append(f"{kid}/{pl}: no estimate: {e}")
                continue
            pairs.append((kid, pl, float(rec["cycles_median"]), float(est)))
    out: dict = {"arch": arch, "pairs": len(pairs), "skipped": skipped, "notes": notes}
    if not pairs:
        out.update(spearman_overall=None, per_kernel={}, per_kernel_mean=None, per_kernel_median=None,
                   direction_agreement=None)
        return out
    meas = [p[2] for p in pairs]
    sim = [p[3] for p in pairs]
    out["spearman_overall"] = spearman(meas, sim)
    per: dict[str, float] = {}
    by_kernel: dict[str, list] = {}
    for p in pairs:
        by_kernel.setdefault(p[0], []).append(p)
    agree = total = 0
    for kid, ps in by_kernel.items():
        rho = spearman([p[2] for p in ps], [p[3] for p in ps])
        if not np.isnan(rho):
            per[kid] = rho
        base = next((p for p in ps if p[1] == "baseline"), None)
        if base is None:
            continue
        for p in ps:
            if p[1] == "baseline":
                continue
            dm, ds = np.sign(p[2] - base[2]), np.sign(p[3] - base[3])
            total += 1
            agree += int(dm == ds)
    vals = np.array(list(per.values()), dtype=np.float64)
    out["per_kernel"] = per
    out["per_kernel_mean"] = float(vals.mean()) if vals.size else None
    out["per_kernel_median"] = float(np.median(vals)) if vals.size else None
    out["direction_agreement"] = (agree / total) if total else None
    out["direction_pairs"] = total
    return out


def format_comparison(c: dict) -> str:
    def f(x):
        return "n/a" if x is None or (isinstance(x, float) and np.isnan(x)) else f"{x:.3f}"

    lines = [f"sim ({c['arch']}, an estimate) vs GPU (measured): {c['pairs']} variants"
             + (f", {c['skipped']} skipped" if c.get("skipped") else ""),
             f"  Spearman over all (kernel, pipeline) pairs: {f(c.get('spearman_overall'))}",
             f"  Spearman per kernel across its pipelines: mean {f(c.get('per_kernel_mean'))}, "
             f"median {f(c.get('per_kernel_median'))} over {len(c.get('per_kernel') or {})} kernels",
             f"  direction of each pass vs baseline agrees: {f(c.get('direction_agreement'))}"
             + (f" of {c.get('direction_pairs')}" if c.get("direction_pairs") else "")]
    for n in c.get("notes", [])[:20]:
        lines.append(f"  note: {n}")
    return "\n".join(lines)


# ---------------------------------------------------------------------------
# Command line
# ---------------------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="python benchmarks/reports/gpu_measure_corpus.py",
        description="Measure corpus kernels and their single-pass variants on this machine's GPU "
                    "(%clock64 instrumentation, CuPy, one child process); optionally compare the sim model.")
    ap.add_argument("--out", type=Path, help="output JSON (default: corpus/measurements/<gpu-name>.json)")
    ap.add_argument("--kernels", default="gemm_tile", help="corpus selector (default: gemm_tile)")
    ap.add_argument("--passes", default="all", help="comma-separated pass names, or 'all' (default)")
    ap.add_argument("--warmup", type=int, default=50)
    ap.add_argument("--repeats", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds per variant (default 300)")
    ap.add_argument("--limit", type=int, help="only the first N selected kernels")
    ap.add_argument("--resume", action="store_true", help="continue an existing --out file")
    ap.add_argument("--samples", action="store_true", help="keep every timed launch's cycles")
    ap.add_argument("--compare-sim", action="store_true", help="print the sim model's rank correlation")
    ap.add_argument("--sim-arch", help=f"architecture for the sim estimates (default: the GPU's, else {DEFAULT_ARCH})")
    ap.add_argument("--input", type=Path, help="compare an existing measurements file instead of measuring")
    return ap


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.input is not None:
        try:
            data = json.loads(args.input.read_text())
        except (OSError, json.JSONDecodeError) as e:
            print(f"error: {args.input}: {e}", file=sys.stderr)
            return 1
        if data.get("kind") != KIND:
            print(f"error: {args.input}: not a ptxopt GPU measurements file", file=sys.stderr)
            return 1
        if args.compare_sim:
            c = compare_sim(data, arch=args.sim_arch)
            print(format_comparison(c))
            if args.out is not None:
                data["sim_comparison"] = c
                _write(args.out, data)
        return 0

    from ptxopt.kernels.corpus import CorpusError, corpus_root, select
    from ptxopt.gpu.probe import gpu_available, gpu_info
    from ptxopt.passes.registry import pass_names

    names = pass_names()
    if args.passes == "all":
        passes = names
    else:
        passes = [p.strip() for p in args.passes.split(",") if p.strip()]
        unknown = [p for p in passes if p not in names]
        if unknown:
            print(f"error: unknown pass(es) {', '.join(unknown)}; valid: {', '.join(names)}", file=sys.stderr)
            return 2
    try:
        kernels = select(args.kernels)
    except CorpusError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if args.limit is not None:
        kernels = kernels[: args.limit]

    ok, reason = gpu_available()
    if not ok:
        print(f"no GPU: {reason}", file=sys.stderr)
        return EXIT_NO_GPU
    info = gpu_info()
    out = args.out or corpus_root() / "measurements" / f"{slug(info['device'])}.json"
    pipelines = ["baseline", *passes]
    data = None
    if args.resume and out.exists():
        data = json.loads(out.read_text())
        if data.get("kind") != KIND or (data.get("gpu") or {}).get("device") != info["device"]:
            print(f"error: {out} holds measurements of another GPU or format; not resuming", file=sys.stderr)
            return 1
    if data is None:
        from ptxopt import __version__ as ptxopt_version
        from ptxopt.toolchain import toolchain_versions

        tv = toolchain_versions()
        data = {
            "schema": SCHEMA, "kind": KIND, "created": _now(), "updated": _now(),
            "ptxopt_version": ptxopt_version,
            "gpu": {k: info.get(k) for k in ("device", "compute_capability", "arch", "driver_version",
                                              "runtime_version", "cupy_version", "sm_count", "clock_rate_khz")},
            "toolchain": {"ptxas": tv["ptxas"], "nvdisasm": tv["nvdisasm"], "ptxas_used": []},
            "settings": {"warmup": args.warmup, "repeats": args.repeats, "seed": args.seed,
                         "flavours": ["random", "edge"], "timeout_s": args.timeout, "kernels": args.kernels,
                         "pipelines": pipelines, "cycles": _CYCLES_DOC, "wall": _WALL_DOC},
            "kernels": {},
        }
        data["gpu"]["driver"] = _cuda_version(info.get("driver_version"))
        data["gpu"]["cuda_runtime"] = _cuda_version(info.get("runtime_version"))
    print(f"measuring {len(kernels)} kernels x {len(pipelines)} pipelines on {reason} -> {out}", file=sys.stderr)
    # `timeout` and schedulers send SIGTERM: leave through SystemExit so the harness child is closed
    # (what was measured is on disk after every kernel; --resume continues)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))
    measure_corpus(data, kernels, pipelines, warmup=args.warmup, repeats=args.repeats, seed=args.seed,
                   timeout=args.timeout, out=out, resume=args.resume, samples=args.samples)
    if args.compare_sim:
        c = compare_sim(data, arch=args.sim_arch)
        data["sim_comparison"] = c
        _write(out, data)
        print(format_comparison(c))
    return 0


if __name__ == "__main__":
    sys.exit(main())
