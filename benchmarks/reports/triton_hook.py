"""What ptxopt's Triton hook does to each corpus Triton kernel, and what it costs.

Every kernel of ``corpus/triton/*.py`` is compiled by real ``triton.compile``
(CPU, ``GPUTarget("cuda", 89, 32)``; :mod:`ptxopt.testing.triton_corpus`):

* **plain**: no hook, a fresh Triton cache -- Triton's own compile time
  (wall time of ``triton.compile``, the median of ``--repeat`` runs, each in
  a fresh cache so nothing is a cache hit);
* **hooked**: ``ptxopt.triton.enable(...)``, a fresh cache and ptxopt's
  in-process memos forgotten (compiles, parses, proofs, SASS, estimates) -- what the hook
  reports (pipeline, changed, verdict, registers before/after from Triton's
  ptxas) and ``ptxopt_seconds``, the time the hook added (parse, passes,
  ptxas twice with Triton's flags, the interpreter check).

Per kernel the table prints what changed, the verdict, registers, the ``sim``
cycle ESTIMATE of Triton's PTX and of the PTX the cubin was built from, and
three ratios to Triton's own compile: ``ratio``, the hook's added time
(``ptxopt_seconds``, inside the ``ptx`` stage) over Triton's wall time; ``cpu``,
the hook's CPU (its threads and its ptxas and nvdisasm children) over the CPU
of Triton's plain compile (its ptxas included); and ``wall``, the hooked
compile's whole wall time over the plain one (what a user waits for: it also
counts the ``cubin`` stage's ptxas run the hook saves when it hands Triton
its own cubin); then the median and geometric mean of the ratio. Nothing is
measured on a GPU.

``--old`` also compiles every kernel, in the same run and interleaved, with
the hook without its savings, as a baseline: Triton's ``cubin`` stage
assembling again what ptxopt assembled, and no step budget for the
equivalence check, the two ptxas runs one after the other and the estimate
compiling both texts again (``reuse_cubin=False``, ``check_steps=None``,
``overlap_compiles=False``), and prints that table first;
``--also-no-estimate`` adds ``enable(estimate=False)``; ``--warm`` adds the
hook with its disk cache (``enable(disk_cache=...)``: SASS listings,
:mod:`ptxopt.measure.sass_store`, and rejected checks,
:mod:`ptxopt.triton.rejections`) already holding what an earlier compile of
the kernel left there, as a later process compiling the same kernels finds it
(every other hooked compile gets an empty folder: cold). Run from another
checkout (a copy of this script in its ``benchmarks/``), the same figures are
measured for that checkout's ptxopt.

``--outside`` measures kernels outside the corpus instead, written as a
user writes them (``benchmarks/outside_kernels/triton_user.py``: the Triton
tutorials' layernorm, softmax and matmul, and a rotary embedding): the
corpus's kernels are small and ptxopt was developed against them.

Run::

    python benchmarks/reports/triton_hook.py                                  # default pipeline
    python benchmarks/reports/triton_hook.py --outside --repeat 3              # a user's kernels, not the corpus
    python benchmarks/reports/triton_hook.py --pipeline vec_ld,vec_st --repeat 5
    python benchmarks/reports/triton_hook.py --pipelines tuned.json           # a 'ptxopt search' results file
    python benchmarks/reports/triton_hook.py --json out.json
    python benchmarks/reports/triton_hook.py --old --repeat 3                  # before/after, one run

Needs ``triton`` (``pip install -e '.[triton]'``).
"""

from __future__ import annotations

import argparse
import inspect
import json
import math
import os
import resource
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

DEFAULT_PIPELINE = "vec_ld,vec_st,reorder_cp,maxnreg_128"


def _fresh_cache() -> str:
    d = tempfile.mkdtemp(prefix="ptxopt-triton-bench-")
    os.environ["TRITON_CACHE_DIR"] = d
    return d


def _cpu() -> float:
    """CPU seconds of this process (every thread) and of its finished children (ptxas, nvdisasm)."""
    ch = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + ch.ru_utime + ch.ru_stime


#: the kernels measured: the corpus's (None) or ``--outside``'s, name -> CORPUS entry
_SPECS: dict | None = None
OUTSIDE = Path(__file__).resolve().parents[1] / "outside_kernels" / "triton_user.py"


def _specs() -> dict:
    from ptxopt.testing.triton_corpus import specs

    return _SPECS if _SPECS is not None else specs()


def _timed_compile(name: str, cpu: list | None = None) -> tuple[float, object]:
    from ptxopt.testing.triton_corpus import compile_kernel

    _fresh_cache()
    c0 = _cpu()
    t = time.perf_counter()
    c = compile_kernel(_specs()[name] if _SPECS is not None else name)
    wall = time.perf_counter() - t
    if cpu is not None:
        cpu.append(_cpu() - c0)
    return wall, c


#: CPU seconds of each hooked rewrite (the hook's ``ptx``-stage work: its threads and its ptxas and
#: nvdisasm children), appended by the wrapper :func:`_count_hook_cpu` installs
_HOOK_CPU: list = []


def _count_hook_cpu() -> None:
    """Wrap ``StagesHook.rewrite`` (whatever ptxopt is imported: the same measure for a base tree)."""
    from ptxopt.triton.hook import StagesHook

    if getattr(StagesHook.rewrite, "_cpu_counted", False):
        return
    real = StagesHook.rewrite

    def rewrite(self, *a, **kw):
        c0 = _cpu()
        try:
            return real(self, *a, **kw)
        finally:
            _HOOK_CPU.append(_cpu() - c0)

    rewrite._cpu_counted = True  # type: ignore[attr-defined]
    StagesHook.rewrite = rewrite


def _store_kw(pt, where) -> dict:
    """enable(disk_cache=where) where this ptxopt keeps things on disk, else nothing."""
    return {"disk_cache": where} if "disk_cache" in inspect.signature(pt.enable).parameters else {}


def _forget() -> None:
    """Forget ptxopt's in-process memos (compiles, parses, proofs, SASS, estimates): each hooked
    compile starts as cold as the plain one, which gets a fresh Triton cache (a cold evaluation session)."""
    from ptxopt.evaluate.session import cold_start

    cold_start()


def _cycles(ptx: str) -> float | None:
    from ptxopt.sim import estimate

    try:
        return float(estimate(ptx, "sm_89").cycles)
    except Exception:  # noqa: BLE001 - a report: print what could be estimated
        return None


#: Variants a run can add to the hook as it is (``--old``, ``--also-no-estimate``): a label, extra
#: enable() arguments, hook attributes. "before": the hook without its savings, as a baseline --
#: Triton's cubin stage assembling again what ptxopt assembled, no step budget for the check, the
#: two ptxas runs one after the other and the estimate compiling both texts again itself.
BEFORE = ("before", {"check_steps": None}, {"reuse_cubin": False, "overlap_compiles": False})
NO_ESTIMATE = ("after, estimate=False", {"estimate": False}, {})
#: the hook as it is, its disk cache already holding what one earlier compile of this kernel left
#: there (SASS listings, a rejected check): a kernel compiled again in a later process (a fresh
#: Triton cache); every other variant gets an empty folder per compile (cold)
WARM = ("after, warm disk cache", {}, {})


def _enable(pt, enable_kw: dict, variant, store=None):
    _, kw, attrs = variant
    store = store if store is not None else tempfile.mkdtemp(prefix="ptxopt-hook-cold-")
    hook = pt.enable(**{**enable_kw, **_store_kw(pt, store), **kw})
    for k, v in attrs.items():
        setattr(hook, k, v)
    return hook


def bench(names: list[str], enable_kw: dict, repeat: int, extra: tuple = ()) -> dict[str, list[dict]]:
    """``{label: rows}``: per kernel, the hook as it is ("after") and each ``extra`` variant,
    measured in the same loop, interleaved, against the same plain compiles."""
    import ptxopt.triton as pt

    variants = [("after", {}, {})] + list(extra)
    out: dict[str, list[dict]] = {v[0]: [] for v in variants}
    _count_hook_cpu()
    pt.disable()
    _timed_compile(names[0])  # warm-up: imports, libdevice, ptxas version probe ...
    pt.enable(**enable_kw, **_store_kw(pt, False))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _timed_compile(names[0])  # ... and ptxopt's lazily imported modules
    pt.disable()
    for name in names:
        plain_s, plain_cpu = [], []
        for _ in range(repeat):
            pt.disable()
            s, plain = _timed_compile(name, plain_cpu)
            plain_s.append(s)
        triton_s = statistics.median(plain_s)
        warm_store = None
        if any(v[0] == WARM[0] for v in variants):  # one untimed compile fills this kernel's store
            warm_store = tempfile.mkdtemp(prefix="ptxopt-hook-warm-")
            _enable(pt, enable_kw, WARM, warm_store)
            _forget()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                _timed_compile(name)
            pt.disable()
        runs = {v[0]: ([], [], [], []) for v in variants}  # hooked wall, added, added CPU, (rep, compiled, warnings)
        for _ in range(repeat):
            for variant in variants:
                _enable(pt, enable_kw, variant, warm_store if variant[0] == WARM[0] else None)
                _forget()
                with warnings.catch_warnings(record=True) as w:
                    warnings.simplefilter("always")
                    s, hooked = _timed_compile(name)
                walls, added, cpu, last = runs[variant[0]]
                walls.append(s)
                added.append(pt.report()[-1].ptxopt_seconds)
                cpu.append(_HOOK_CPU[-1])
                last[:] = [(pt.report()[-1], hooked, w)]
                pt.disable()
        for label, r in runs.items():
            out[label].append(_row(name, plain, triton_s, statistics.median(plain_cpu), *r))
    return out


def _row(name, plain, triton_s, triton_cpu, hooked_s, added, added_cpu, last) -> dict:
    import ptxopt.triton as pt
    from ptxopt.equivalence.budget import BUDGET_SPENT

    [(rep, hooked, w)] = last
    ptxopt_s = statistics.median(added)
    before, after = _cycles(plain.asm["ptx"]), _cycles(hooked.asm["ptx"])
    notes = [f"{p['pass']}: {p['note']}" for p in rep.passes if p.get("note")]
    refused = sum(len(p["refused"]) for p in rep.passes)
    budget = bool(rep.verdict_note) and BUDGET_SPENT in rep.verdict_note
    return {
        "kernel": name, "entry": rep.name, "family": _specs()[name]["family"],
        "pipeline": rep.pipeline or "-", "changed": rep.changed,
        "verdict": (f"{rep.verdict} (budget)" if budget else rep.verdict) or "-",
        "reason": rep.reason or None, "why_pipeline": rep.why_pipeline,
        "registers": list(rep.registers), "cycles_estimate": [before, after],
        "sites_changed": sum(p["changed"] for p in rep.passes), "sites_refused": refused,
        "vectorizer_notes": notes,
        "triton_compile_s": triton_s, "hooked_compile_s": statistics.median(hooked_s),
        "ptxopt_s": ptxopt_s, "ratio": ptxopt_s / triton_s if triton_s else None,
        "triton_cpu_s": triton_cpu, "ptxopt_cpu_s": statistics.median(added_cpu),
        "cpu_ratio": statistics.median(added_cpu) / triton_cpu if triton_cpu else None,
        "warnings": len([x for x in w if issubclass(x.category, pt.PtxoptTritonWarning)]),
        # the hook's own comparison (what decides "never apply a slower choice"): objective, launch, cycles
        "objective": rep.objective or None, "launch": rep.launch or None,
        "hook_estimate": list(rep.estimate),
        "stage_seconds": dict(getattr(rep, "stage_seconds", {}) or {}),
        "cubin_reused": bool(getattr(rep, "cubin_reused", False)),
        "wall": statistics.median(hooked_s) / triton_s if triton_s else None,
    }


def _fmt(x, spec=".0f") -> str:
    return "-" if x is None else format(x, spec)


def print_table(rows: list[dict], title: str) -> None:
    print(title)
    print("sim cycles: Triton's PTX -> the PTX the cubin was built from; + = fewer estimated cycles")
    head = (f"{'kernel':21s} {'family':13s} {'changed':7s} {'verdict':21s} {'regs':>9s} "
            f"{'sim cycles (ESTIMATE)':>22s} {'ptxopt s':>8s} {'triton s':>8s} {'ratio':>6s} {'wall':>6s} "
            f"{'cpu':>6s} {'cubin':>6s}")
    print(head)
    print("-" * len(head))
    for r in rows:
        b, a = r["cycles_estimate"]
        d = f"{100 * (1 - a / b):+.1f}%" if a and b else ""
        cyc = f"{_fmt(b)}->{_fmt(a)} {d}"
        regs = "-" if r["registers"][0] is None else \
            f"{_fmt(r['registers'][0], 'd')}->{_fmt(r['registers'][1], 'd')}"
        print(f"{r['kernel']:21s} {r['family']:13s} {('yes' if r['changed'] else 'no'):7s} {r['verdict']:21s} "
              f"{regs:>9s} {cyc:>22s} {r['ptxopt_s']:8.3f} {r['triton_compile_s']:8.3f} {_fmt(r['ratio'], '.2f'):>6s} "
              f"{_fmt(r.get('wall'), '.2f'):>6s} {_fmt(r.get('cpu_ratio'), '.2f'):>6s} "
              f"{('reused' if r.get('cubin_reused') else 'triton'):>6s}")
    for r in rows:
        if r["reason"]:
            print(f"  {r['kernel']}: kept Triton's PTX: {r['reason'][:160]}")
    for r in rows:
        b, a = r.get("hook_estimate") or (None, None)
        if b is not None:
            print(f"  {r['kernel']}: the hook's {r['objective']} estimate {b:g} -> {a:g} cycles on {r['launch']}")
    for r in rows:
        for n in r["vectorizer_notes"]:
            print(f"  {r['kernel']}: {n}")
    for label, sel in (("kernels given a pipeline", [r for r in rows if r["pipeline"] != "-"]),
                       ("all kernels", rows)):
        ratios = [r["ratio"] for r in sel if r["ratio"] is not None]
        if not ratios:
            continue
        tot = sum(r["ptxopt_s"] for r in sel) / sum(r["triton_compile_s"] for r in sel)
        pos = [x for x in ratios if x > 0]
        geo = math.exp(sum(math.log(x) for x in pos) / len(pos)) if pos else 0.0
        print(f"hook's added compile time / Triton's own compile time, {label} ({len(ratios)}): "
              f"median {statistics.median(ratios):.2f}, geomean {geo:.2f}, min {min(ratios):.2f}, "
              f"max {max(ratios):.2f}, total {tot:.2f}")
        cpus = [r["cpu_ratio"] for r in sel if r.get("cpu_ratio") is not None]
        if cpus:
            tot = sum(r["ptxopt_cpu_s"] for r in sel) / sum(r["triton_cpu_s"] for r in sel)
            print(f"hook's added CPU (its threads, ptxas and nvdisasm) / Triton's compile CPU, {label} "
                  f"({len(cpus)}): median {statistics.median(cpus):.2f}, min {min(cpus):.2f}, "
                  f"max {max(cpus):.2f}, total {tot:.2f}; kernels over 1x: {sum(x > 1 for x in cpus)}")
        walls = [r["wall"] for r in sel if r.get("wall") is not None]
        if walls:
            print(f"hooked compile wall / plain compile wall, {label} ({len(walls)}): "
                  f"median {statistics.median(walls):.2f}, min {min(walls):.2f}, max {max(walls):.2f}; "
                  f"kernels over 1x by added time: {sum(x > 1 for x in ratios)}")
    print(f"rewritten: {sum(r['changed'] for r in rows)}/{len(rows)}; kept Triton's PTX with a warning: "
          f"{sum(bool(r['reason']) for r in rows)}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--pipeline", default=None, help=f"one pipeline for every kernel [default: {DEFAULT_PIPELINE}]")
    g.add_argument("--pipelines", default=None, help="a results file of 'ptxopt search TRITON_CACHE_DIR'")
    g.add_argument("--policy", default=None, help="a policy checkpoint (ptxopt train)")
    ap.add_argument("--kernels", default=None, help="comma-separated corpus names [default: all]")
    ap.add_argument("--outside", action="store_true",
                    help=f"a user's kernels outside the corpus ({OUTSIDE.name}) instead of the corpus's")
    ap.add_argument("--repeat", type=int, default=3, help="compiles per kernel and mode (median) [default: 3]")
    ap.add_argument("--no-verify", action="store_true", help="enable(verify=False): ptxas only")
    ap.add_argument("--budget-s", type=float, default=None, help="enable(budget_s=S): the hook's compile-time budget")
    ap.add_argument("--no-estimate", action="store_true", help="enable(estimate=False): no speed comparison")
    ap.add_argument("--json", default=None, help="write the rows here")
    ap.add_argument("--old", action="store_true",
                    help="also the hook as it was (no cubin reuse, no check budget), same run, interleaved")
    ap.add_argument("--also-no-estimate", action="store_true",
                    help="also enable(estimate=False), same run, interleaved")
    ap.add_argument("--warm", action="store_true",
                    help="also the hook with its disk cache already holding what an earlier compile "
                         "of the kernel left (a later process), same run, interleaved")
    a = ap.parse_args(argv)
    try:
        import triton  # noqa: F401
    except ImportError:
        print("benchmarks/reports/triton_hook.py needs triton: pip install -e '.[triton]'", file=sys.stderr)
        return 2
    os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")
    from ptxopt.testing.triton_corpus import load_specs

    global _SPECS
    if a.outside:
        _SPECS = load_specs(OUTSIDE)
    names = a.kernels.split(",") if a.kernels else sorted(_specs())
    kw = ({"pipelines": a.pipelines} if a.pipelines else {"policy": a.policy} if a.policy
          else {"pipeline": a.pipeline or DEFAULT_PIPELINE})
    kw["verify"] = not a.no_verify
    if a.budget_s is not None:
        kw["budget_s"] = a.budget_s
    if a.no_estimate:
        kw["estimate"] = False
    extra = ((BEFORE,) if a.old else ()) + ((NO_ESTIMATE,) if a.also_no_estimate else ()) + \
        ((WARM,) if a.warm else ())
    tables = bench(names, kw, max(1, a.repeat), extra)
    what = (f"pipelines file {a.pipelines}" if a.pipelines else f"policy {a.policy}" if a.policy
            else f"pipeline {kw['pipeline']}")
    what += ", kernels outside the corpus" if a.outside else ""
    title = (f"ptxopt Triton hook, {what}, verify={kw['verify']}, estimate={kw.get('estimate', True)}, sm_89, "
             f"median of {a.repeat} "
             f"compiles per mode (CPU only; cycles are a sim ESTIMATE)")
    heads = {"before": "BEFORE (no cubin reuse, no check budget, estimate compiling again): ", "after": "AFTER: " if extra else "",
             NO_ESTIMATE[0]: "AFTER, enable(estimate=False): ",
             WARM[0]: "AFTER, disk cache warm (a later process compiling the same kernels): "}
    for label in sorted(tables, key=lambda x: x != "before"):
        print_table(tables[label], heads[label] + title)
        print()
    if a.json:
        Path(a.json).write_text(json.dumps(tables if extra else tables["after"], indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
