"""Front-end speed, measured as ratios in one run (the machine is shared and noisy).

Targets (issue: foundation, section 7):
* parsing >= 50,000 PTX lines/s on the 16x16x16 gemm and on the largest Triton kernel;
* printing >= 200,000 lines/s;
* copying a module >= 10x faster than re-parsing it;
* parse time as a fraction of ptxas time for the same kernel (reported, no target).

Each figure is the best of several repetitions (the least disturbed one), in
wall-clock time. Run: ``python benchmarks/speed/frontend_speed.py [--json]``.

``--corpus`` (the target: parse <= 0.10 of ptxas on the corpus): every corpus
kernel (``--every K``: every K-th), parse CPU time (best of ``--reps``) with
the fast body path and with Lark alone (:data:`ptxopt.ptx.parser.FAST_BODIES`),
against one ptxas run's CPU time (its children's rusage) and wall time; the
sums' ratios are printed, both in one run.

``--imports``: the start-up imports of ``ptxopt --help`` and of a small
``ptxopt run`` (``python -X importtime``, the sum of the top-level imports,
best of 5 fresh interpreters; the target: <= 0.2 s), and the CPU
time of importing exactly those modules, compiled from source as this
environment does (``PYTHONDONTWRITEBYTECODE=1``) and with byte code cached
(as an installed ptxopt runs).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ptxopt.ptx import parser as P
from ptxopt.kernels.corpus import select
from ptxopt.ptx.emit import emit
from ptxopt.ptx.parser import parse
from ptxopt.toolchain import compile_ptx
from ptxopt.toolchain.arch import DEFAULT_ARCH

TARGET_PARSE = 50_000
TARGET_EMIT = 200_000
TARGET_COPY_RATIO = 10.0


def best_of(fn, reps: int) -> float:
    best = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def measure(kernel_id: str, reps: int) -> dict:
    text = select(kernel_id)[0].ptx_text()
    lines = text.count("\n")
    parse(text)  # warm the grammar tables
    t_parse = best_of(lambda: parse(text), reps)
    m = parse(text)
    t_emit = best_of(lambda: emit(m), reps)
    t_copy = best_of(lambda: m.copy(), reps * 5)
    t_ptxas = min(compile_ptx(text, DEFAULT_ARCH).wall_time_s for _ in range(3))
    return {
        "kernel": kernel_id,
        "lines": lines,
        "parse_lines_per_s": lines / t_parse,
        "emit_lines_per_s": lines / t_emit,
        "parse_ms": t_parse * 1e3,
        "copy_ms": t_copy * 1e3,
        "copy_speedup_vs_parse": t_parse / t_copy,
        "ptxas_ms": t_ptxas * 1e3,
        "parse_fraction_of_ptxas": t_parse / t_ptxas,
    }


def _cpu_best(fn, reps: int) -> float:
    best = float("inf")
    for _ in range(reps):
        t0 = time.process_time()
        fn()
        best = min(best, time.process_time() - t0)
    return best


def _ptxas_cpu(text: str) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of one ptxas run of ``text``."""
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall = compile_ptx(text, DEFAULT_ARCH, memo=False).wall_time_s
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime), wall


def corpus_ratios(every: int, reps: int) -> dict:
    """Parse time (fast bodies and Lark alone) against ptxas on the corpus."""
    kernels = select("all")[::every]
    parse(kernels[0].ptx_text())
    fast = lark = cpu = wall = 0.0
    for k in kernels:
        text = k.ptx_text()
        try:
            c, w = _ptxas_cpu(text)
        except Exception:  # a kernel this ptxas refuses (a newer .version): not counted
            continue
        cpu, wall = cpu + c, wall + w
        P.FAST_BODIES = True
        fast += _cpu_best(lambda text=text: parse(text), reps)
        P.FAST_BODIES = False
        lark += _cpu_best(lambda text=text: parse(text), reps)
        P.FAST_BODIES = True
    return {"kernels": len(kernels), "ptxas_cpu_s": cpu, "ptxas_wall_s": wall, "parse_cpu_s": fast,
            "lark_parse_cpu_s": lark, "parse_over_ptxas_cpu": fast / cpu, "lark_over_ptxas_cpu": lark / cpu,
            "parse_over_ptxas_wall": fast / wall, "lark_over_ptxas_wall": lark / wall}


_IMPORT_LINE = re.compile(r"import time:\s+\d+ \|\s+(\d+) \| (\S.*)")


#: top-level imports every interpreter of this environment makes before ptxopt's code runs
_INTERPRETER = ("site", "encodings", "_frozen_importlib_external", "zipimport", "io", "abc", "codecs",
                "_distutils_hack", "__editable__", "importlib.metadata", "runpy")


def import_seconds(*argv: str, runs: int = 5, root: Path | None = None) -> tuple[float, float]:
    """Best totals, over ``runs`` fresh interpreters, of what ``python -X
    importtime -m ptxopt.cli ARGV`` imports: (the ``ptxopt`` modules with
    everything they pull in at their import; every import of the command's
    whole run -- lark, say, imported on the first parse -- but the
    interpreter's own start-up)."""
    root = root or Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(root)}
    best_start = best_all = float("inf")
    for _ in range(runs):
        r = subprocess.run([sys.executable, "-X", "importtime", "-m", "ptxopt.cli", *argv], cwd=root, env=env,
                           capture_output=True, text=True, timeout=300)
        top = [(m.group(2), int(m.group(1))) for m in map(_IMPORT_LINE.match, r.stderr.splitlines())
               if m and not m.group(2).startswith(" ")]
        start = sum(us for name, us in top if name.startswith("ptxopt"))
        every = sum(us for name, us in top if not name.startswith(_INTERPRETER))
        best_start, best_all = min(best_start, start / 1e6), min(best_all, every / 1e6)
    return best_start, best_all


_PROBE = """
import sys
start = set(sys.modules)
import ptxopt.cli
try:
    ptxopt.cli.main(sys.argv[1:])
except SystemExit:
    pass
sys.stdout = sys.__stderr__
print("MODULES " + " ".join(sorted(set(sys.modules) - start)), file=sys.stderr)
"""

_TIMER = """
import importlib, sys, time
mods = sys.argv[1:]
t = time.process_time()
for m in mods:
    try:
        importlib.import_module(m)
    except Exception:
        pass
print(time.process_time() - t)
"""


def import_cpu_seconds(*argv: str, runs: int = 5, root: Path | None = None,
                       pycache: Path | None = None) -> tuple[int, float]:
    """(how many modules ``ptxopt ARGV`` imports, the best CPU time over
    ``runs`` fresh interpreters of importing exactly those): a start-up
    figure that a loaded machine sways much less than -X importtime's wall.

    As the environment says: with ``PYTHONDONTWRITEBYTECODE=1`` (this
    machine's setting) every run compiles ptxopt's sources again. With
    ``pycache`` (a folder), byte code is written there and read back
    (``PYTHONPYCACHEPREFIX``, after one warming run): what an installed
    ptxopt pays, its ``.pyc`` files written when pip installed it."""
    root = root or Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(root)}
    if pycache is not None:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(pycache)
    r = subprocess.run([sys.executable, "-c", _PROBE, *argv], cwd=root, env=env, capture_output=True, text=True,
                       timeout=300)
    line = next(x for x in r.stderr.splitlines() if x.startswith("MODULES "))
    mods = [m for m in line.split()[1:] if not m.startswith("__main__")]
    best = float("inf")
    for _ in range(runs + (pycache is not None)):
        t = subprocess.run([sys.executable, "-c", _TIMER, *mods], cwd=root, env=env, capture_output=True,
                           text=True, timeout=300)
        best = min(best, float(t.stdout.strip().splitlines()[-1]))
    return len(mods), best


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--corpus", action="store_true", help="parse vs ptxas on the whole corpus")
    ap.add_argument("--every", type=int, default=1, help="with --corpus: every K-th kernel")
    ap.add_argument("--imports", action="store_true", help="start-up import time of the CLI")
    ap.add_argument("--root", type=Path, default=None, help="with --imports: the checkout to time (default: this one)")
    args = ap.parse_args()
    if args.imports:
        out = Path(os.environ.get("TMPDIR", "/tmp")) / "ptxopt_import_probe.ptx"
        for label, argv in (("ptxopt --help", ("--help",)),
                            ("ptxopt run -p vec_ld gemm_tile_4x4x4", ("run", "-p", "vec_ld", "--no-compile-check",
                                                                      "corpus:gemm_tile_4x4x4", "-o", str(out))),
                            ("ptxopt eval -p vec_ld gemm_tile_8x8x8", ("eval", "--no-cache", "-p", "vec_ld",
                                                                       "corpus:gemm_tile_8x8x8"))):
            start, every = import_seconds(*argv, root=args.root)
            count, cpu = import_cpu_seconds(*argv, root=args.root)
            with tempfile.TemporaryDirectory() as tmp:
                _, cached = import_cpu_seconds(*argv, root=args.root, pycache=Path(tmp))
            print(f"imports of {label}: {start:.3f} s ptxopt's modules, {every:.3f} s in all (wall); "
                  f"{count} modules, {cpu:.3f} s CPU, {cached:.3f} s CPU with byte code cached (target <= 0.2 s)")
        return 0
    if args.corpus:
        r = corpus_ratios(args.every, min(args.reps, 3))
        if args.json:
            print(json.dumps(r, indent=2))
            return 0
        print(f"corpus ({r['kernels']} kernels): ptxas {r['ptxas_cpu_s']:.2f} s CPU, {r['ptxas_wall_s']:.2f} s wall")
        print(f"  parse, fast bodies: {r['parse_cpu_s']:.2f} s CPU = {r['parse_over_ptxas_cpu']:.3f} of ptxas CPU, "
              f"{r['parse_over_ptxas_wall']:.3f} of its wall (target <= 0.10)")
        print(f"  parse, Lark alone:  {r['lark_parse_cpu_s']:.2f} s CPU = {r['lark_over_ptxas_cpu']:.3f} of ptxas CPU, "
              f"{r['lark_over_ptxas_wall']:.3f} of its wall")
        return 0
    triton = max(select("triton"), key=lambda k: k.ptx_text().count("\n"))
    rows = [measure("gemm_tile_16x16x16", args.reps), measure(triton.id, args.reps * 4)]
    ok = all(r["parse_lines_per_s"] >= TARGET_PARSE and r["emit_lines_per_s"] >= TARGET_EMIT
             and r["copy_speedup_vs_parse"] >= TARGET_COPY_RATIO for r in rows)
    if args.json:
        print(json.dumps({"parser_backend": P.BACKEND, "rows": rows, "targets_met": ok}, indent=2))
        return 0 if ok else 1
    print(f"parser engine: {P.BACKEND}")
    for r in rows:
        print(f"{r['kernel']} ({r['lines']} lines)")
        print(f"  parse  {r['parse_lines_per_s']:>10,.0f} lines/s  ({r['parse_lines_per_s'] / TARGET_PARSE:.2f}x target)"
              f"  {r['parse_ms']:.1f} ms")
        print(f"  emit   {r['emit_lines_per_s']:>10,.0f} lines/s  ({r['emit_lines_per_s'] / TARGET_EMIT:.2f}x target)")
        print(f"  copy   {r['copy_speedup_vs_parse']:>10,.0f}x faster than parse ({r['copy_ms']:.3f} ms)")
        print(f"  ptxas  {r['ptxas_ms']:>10.1f} ms; parse = {r['parse_fraction_of_ptxas']:.2f} of ptxas time")
    print("targets met" if ok else "TARGETS MISSED")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
