"""What the issue-31 actions are worth to search: greedy with vs without them,
headroom, verdicts per new pass, pass cost (issue 31, "Measure").

    PYTHONPATH=. python benchmarks/studies/loop_actions_report.py [--per-family 2] [--gemm IDS]
        [--headroom IDS] [--random-budget 200] [--exhaustive-steps 2] [--cache PATH] [--json OUT]
        [--only IDS] [--skip-greedy] [--no-unchecked]

The cache defaults to ``/tmp/ptxopt-loop-actions/eval.sqlite`` (not the user cache): a cold run of
the default sample (51 kernels, 26 actions) took ~17 min on 2 shared cores (1038 s), a warm rerun ~30 s.

The new actions (:data:`NEW_ACTIONS`) are the six appended to
:data:`ptxopt.search.actions.PASS_ACTIONS` by issue 31 (``unroll{factor=8}``
last, appended after the other five); "without" searches over the other
twenty (:data:`OLD_ACTIONS`). Both runs go through one
evaluator cache (and its move memo), so the second pays only for the modules
the first never measured.

Kernels (:func:`sample`): every hand-written nvcc/Triton kernel with a PTX
loop, ``--per-family`` kernels of each generated family with a loop (evenly
spread over the family's 16 sizes) and the ``--gemm`` tiles. The objective
is each kernel's default (:func:`ptxopt.evaluate.candidate.objective_for`):
``throughput`` on the manifest's performance launch for the loop kernels,
``latency`` (one warp) for the gemm tiles -- the same rule ``ptxopt search``
uses.

Tables:

1. per kernel: greedy's gain without and with the new actions, each
   pipeline, and the new actions' extra gain (percentage points); where
   the search masks every launch_bounds action at the root although the
   evaluator changes the kernel with it (the search's states bind the
   performance launch as the evaluator does, so this should never run),
   greedy with them bound as extra actions; where a new pass is ``inconclusive``,
   greedy with inconclusive candidates accepted (UNCHECKED: what the
   validation gap costs, never a result);
2. headroom (``--headroom`` kernels): exhaustive (``--exhaustive-steps``
   passes) and random (``--random-budget`` evaluations) over all 26 actions
   against greedy with them;
3. per new pass, applied alone to each sampled kernel: does it change the
   kernel, and the evaluator's verdict (proved / equal / inconclusive /
   differ = ``mismatch``/``fault`` / other failures by status);
4. per new pass, its cost on each kernel it changes (the pass and printing,
   on a fresh parse, memos cleared) as a fraction of ptxas on the original
   (one run, wall and CPU).

Every cycle figure is the sim model's ESTIMATE (the throughput model is
uncalibrated). ``benchmarks/studies/unroll_verdicts.py`` stays the tool for the
loop mutants; ``benchmarks/speed/pass_speed.py`` for
every pass on the big gemm tile.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter, defaultdict
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from ptxopt.search.actions import PASS_ACTIONS

#: The actions issue 31 added (the last six of PASS_ACTIONS).
NEW_ACTIONS: tuple[str, ...] = ("launch_bounds_2", "launch_bounds{minblocks=4}", "nc_ld", "unroll_2", "unroll_4",
                                "unroll{factor=8}")
#: The action list before issue 31: the "without" searches.
OLD_ACTIONS: tuple[str, ...] = PASS_ACTIONS[:20]  # the first twenty (actions appended after NEW_ACTIONS are in neither)

DEFAULT_GEMM = "gemm_tile_2x2x2,gemm_tile_4x4x4,gemm_tile_4x8x6,gemm_tile_8x8x8"
DEFAULT_HEADROOM = "cuda_matmul_naive,triton_matmul_f16,cuda_attention_small,gen_conv1d_00,triton_attention,gemm_tile_4x4x4"
#: what an evaluator status counts as in the verdict table (mismatch/fault are counterexamples)
DIFFER_STATUSES = ("mismatch", "fault")


def has_loop(spec) -> bool:
    from ptxopt.measure.measured_trips import loop_headers
    from ptxopt.ptx.parser import parse

    return bool(loop_headers(parse(spec.ptx_text()), spec.entry))


def sample(per_family: int, gemm: str) -> list:
    """The kernels measured, in this order: hand-written loop kernels (all),
    the gemm tiles, then ``per_family`` of each generated family's loop
    kernels (evenly spaced over its sizes), one round per family at a time."""
    from ptxopt.kernels.corpus import load_manifest, select

    picked, by_family = [], defaultdict(list)
    for s in load_manifest():
        if s.family == "gemm_tile" or not has_loop(s):
            continue
        if s.generated:
            by_family[s.family].append(s)
        else:
            picked.append(s)
    picked += select(gemm) if gemm else []
    rounds = [[] for _ in range(per_family)]  # round i: the i-th pick of every family (a cut run stays stratified)
    for specs in by_family.values():
        n = min(per_family, len(specs))
        for i in range(n):
            rounds[i].append(specs[round(i * (len(specs) - 1) / (n - 1))] if n > 1 else specs[0])
    return picked + [s for r in rounds for s in r]


def search(spec, strategy: str, actions: tuple[str, ...], options, budget: int | None = None,
           max_steps: int = 6) -> dict:
    """One strategy on one kernel over ``actions`` (a subset of the search's
    pass actions, in their order), through :mod:`ptxopt.search`'s own
    strategies and meter; returns the figures the tables print."""
    from ptxopt.evaluate import Candidate
    from ptxopt.search import Meter, State
    from ptxopt.evaluate.move_memo import memo_beside
    from ptxopt.search.run import STRATEGIES

    t0 = time.perf_counter()
    root = State.root(Candidate.from_corpus(spec), memo=memo_beside(options.cache))
    root = replace(root, actions=actions)  # children inherit the root's action list (extras after them)
    meter = Meter(options, budget=budget)
    out = STRATEGIES[strategy](root, meter, max_steps=max_steps)
    base, best = out.baseline, out.best_result
    gain = (100.0 * (1 - best.cycles / base.cycles)) if base.ok and base.cycles and best.cycles else None
    return {"kernel": spec.id, "strategy": strategy, "actions": len(actions), "pipeline": str(out.best.pipeline),
            "baseline_cycles": base.cycles, "best_cycles": best.cycles, "gain_pct": gain,
            "verdict": best.equivalence if best.ok else None, "objective": base.objective,
            "dram_bound": dram_bound(base) if base.ok else None,
            "performance": base.performance, "evaluations": meter.evaluations, "cache_hits": meter.cache_hits,
            "failures": dict(meter.failures), "unchecked": meter.unchecked_total, "note": out.note,
            "error": None if base.ok else f"baseline {base.status}: {base.error}",
            "wall_s": round(time.perf_counter() - t0, 2), "_root": root, "_meter": meter}


def dram_bound(r) -> bool:
    """Is this throughput estimate the launch's DRAM-bandwidth bound (the sim
    model's note "DRAM for the launch N cycles" equals its cycles)? Then no
    rewrite that keeps the bytes moved can change it."""
    import re

    for n in r.notes:
        m = re.search(r"DRAM for the launch ([\d,]+) cycles", n)
        if m and r.cycles and abs(float(m.group(1).replace(",", "")) - r.cycles) <= max(1.0, 1e-4 * r.cycles):
            return True
    return False


def bound_launch_bounds(spec) -> tuple[str, ...]:
    """The launch_bounds actions with the performance launch's block bound
    (``launch_bounds{minblocks=2,block=...}``), as the evaluator binds them
    for a pipeline it is given (:meth:`ptxopt.passes.pipeline.Pipeline.with_launch`).
    The search's states bind them the same way
    (:func:`ptxopt.evaluate.candidate.bind_launch`); before they did, on an
    entry without ``.reqntid`` (every nvcc kernel) the actions were masked
    "no change", and these extra actions measured what binding would give
    (run only where the search's own launch_bounds actions are all masked at
    the root). Empty without a performance launch."""
    from ptxopt.evaluate import Candidate
    from ptxopt.evaluate.candidate import performance_for
    from ptxopt.search.actions import action_pass

    perf = performance_for(Candidate.from_corpus(spec))
    if perf is None:
        return ()
    return tuple(str(action_pass(a).with_launch(perf, spec.entry)) for a in NEW_ACTIONS if a.startswith("launch_bounds"))


def masked_at_root(run: dict) -> dict:
    """Per new action: the search's mask at the root (None: legal, else the reason)."""
    return {mv.action: mv.reason for mv in run["_root"].moves() if mv.action in NEW_ACTIONS}


def verdicts_alone(spec, options) -> dict:
    """Per new action, the pipeline of that pass alone on the kernel, as the
    evaluator judges it (the performance launch bound, like ``ptxopt
    evaluate``): 'no change', 'refused' (the pass refused the module), the
    verdict, 'differ' (mismatch/fault) or 'failed:STATUS'; with its note.
    Mostly cache hits: greedy's first step measured the same modules."""
    from ptxopt.evaluate import Candidate, evaluate_many
    from ptxopt.passes.pipeline import Pipeline

    base = Candidate.from_corpus(spec)
    cands = [replace(base, pipeline=Pipeline.parse(a)) for a in NEW_ACTIONS]
    out = {}
    for act, r in zip(NEW_ACTIONS, evaluate_many(cands, workers=0, **options.kwargs())):
        if r.ok and not r.changed:
            v = "no change"
        elif r.ok:
            v = r.equivalence
        elif r.status == "illegal":
            v = "refused"
        elif r.status in DIFFER_STATUSES:
            v = "differ"
        else:
            v = f"failed:{r.status}"
        note = r.equivalence_note or r.error or ""
        out[act] = {"verdict": v, "note": note[:300]}
        if v == "inconclusive":
            out[act]["kind"] = _inconclusive_kind(note)  # from the whole note: its reason may come late
    return out


def refusals(spec, bound: tuple[str, ...] = ()) -> dict:
    """Per new pass (launch_bounds bound as in :func:`pass_cost`): the sites
    it changed on the original, and the reasons it gave for the sites it
    refused (unroll: a loop it cannot count, a barrier under a non-uniform
    trip count, ...; nc_ld: a buffer the kernel may write)."""
    from ptxopt.ptx.parser import parse
    from ptxopt.passes.base import IllegalPass
    from ptxopt.search.actions import action_pass

    m = parse(spec.ptx_text())
    bound_of = dict(zip([x for x in NEW_ACTIONS if x.startswith("launch_bounds")], bound))
    out = {}
    for name in NEW_ACTIONS:
        try:
            _res, rep = action_pass(bound_of.get(name, name)).apply(m)
        except IllegalPass as e:
            out[name] = {"changed": 0, "refused": [f"illegal: {e}"]}
            continue
        out[name] = {"changed": len(rep.changed), "refused": [s.what for s in rep.refused]}
    return out


def _inconclusive_kind(note: str) -> str:
    """The kind of an ``inconclusive`` verdict's note, for counting."""
    if note.startswith("assumes noalias"):
        return "assumes noalias (ld.global.nc loads whose operands the original's lack)"
    if "never ran under this contract" in note:
        return "changed instructions never ran at the check launch (coverage)"
    if "not checkable at boundary trip counts" in note:
        return "loop rewrite not proved, not checkable at boundary trip counts"
    return note.split(":")[0][:70]


def _reason_kind(reason: str) -> str:
    """A refusal reason without its kernel-specific parts (parentheticals,
    lines, labels, registers, types), for counting."""
    import re

    r = re.sub(r"\s*\((?:[^()]|\([^()]*\))*\)", "", reason)
    r = re.sub(r"\S+:\d+|\$\w+|%\w+", "_", r)
    r = re.sub(r"\b(ld|st|atom|red)((?:\.\w+)*)", r"\1", r)
    return r[:80]


def pass_cost(spec, bound: tuple[str, ...] = (), reps: int = 3) -> dict:
    """Each new pass that changes ``spec``: the pass and printing on a fresh
    parse with the front-end memos cleared (as ``benchmarks/speed/pass_speed.py``'s
    cold column), against ptxas on the original; best of ``reps``, wall and CPU.
    A launch_bounds action is timed bound to the performance block when
    ``bound`` (from :func:`bound_launch_bounds`) gives it: unbound it
    refuses every entry without ``.reqntid``."""
    import resource

    from ptxopt.ptx.emit import emit
    from ptxopt.evaluate.session import cold_start as clear_front_end
    from ptxopt.ptx.parser import parse
    from ptxopt.search.actions import action_pass
    from ptxopt.toolchain import compile_ptx

    text = spec.ptx_text()
    ptxas = ptxas_cpu = float("inf")
    for _ in range(reps):
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        ptxas = min(ptxas, compile_ptx(text, spec.arch, memo=False).wall_time_s)
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        ptxas_cpu = min(ptxas_cpu, r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime)
    out = {"ptxas_s": ptxas, "ptxas_cpu_s": ptxas_cpu, "passes": {}}
    bound_of = dict(zip([x for x in NEW_ACTIONS if x.startswith("launch_bounds")], bound))
    for name in NEW_ACTIONS:
        p = action_pass(bound_of.get(name, name))
        wall = cpu = float("inf")
        changed = False
        for _ in range(reps):
            m = parse(text)  # operand facts live on the instructions: only a new parse is cold
            clear_front_end()
            t0, c0 = time.perf_counter(), time.process_time()
            try:
                res, _report = p.apply(m)
                printed = emit(res)
            except Exception:  # noqa: BLE001 - a refusal: nothing to time
                break
            wall, cpu = min(wall, time.perf_counter() - t0), min(cpu, time.process_time() - c0)
            changed = printed != emit(m)
        if changed:
            out["passes"][name] = {"wall_s": wall, "cpu_s": cpu, "wall_frac": wall / ptxas,
                                   "cpu_frac": cpu / ptxas_cpu if ptxas_cpu > 0 else None}
    return out


def passes_of(pipeline: str) -> list[str]:
    """The pass strings of a printed pipeline ('' = none)."""
    from ptxopt.passes.pipeline import Pipeline

    return [str(p) for p in Pipeline.parse(pipeline).passes] if pipeline else []


def _diff(a: dict, b: dict) -> float | None:
    return None if a["gain_pct"] is None or b["gain_pct"] is None else a["gain_pct"] - b["gain_pct"]


def _pct(x) -> str:
    return "-" if x is None else f"{x:6.2f}"


def _public(run: dict) -> dict:
    return {k: v for k, v in run.items() if not k.startswith("_")}


def main() -> int:
    from ptxopt.search import EvalOptions

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--per-family", type=int, default=2, help="generated loop kernels per family")
    ap.add_argument("--gemm", default=DEFAULT_GEMM, help="gemm tiles (latency objective); '' for none")
    ap.add_argument("--only", default="", help="comma list of kernel ids: measure just these (overrides the sample)")
    ap.add_argument("--headroom", default=DEFAULT_HEADROOM, help="kernels for exhaustive/random; '' for none")
    ap.add_argument("--unchecked", action=argparse.BooleanOptionalAction, default=True,
                    help="where a new pass is inconclusive (and the kernel not DRAM-bound), also run greedy with "
                         "inconclusive candidates accepted: what the validation gap costs (never a result)")
    ap.add_argument("--skip-greedy", action="store_true", help="only the headroom table (table 2)")
    ap.add_argument("--exhaustive-steps", type=int, default=2)
    ap.add_argument("--random-budget", type=int, default=200)
    ap.add_argument("--max-steps", type=int, default=6)
    ap.add_argument("--cache", default=str(Path("/tmp") / "ptxopt-loop-actions" / "eval.sqlite"))
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    Path(a.cache).parent.mkdir(parents=True, exist_ok=True)
    options = EvalOptions(cache=a.cache)
    if a.skip_greedy:
        specs = []
    elif a.only:
        from ptxopt.kernels.corpus import select

        specs = select(a.only)
    else:
        specs = sample(a.per_family, a.gemm)
    t_all = time.perf_counter()
    doc = {"cycles": "ESTIMATE (sim model; throughput model uncalibrated)", "new_actions": list(NEW_ACTIONS),
           "kernels": [], "headroom": [], "verdicts": {}, "pass_cost": {}}
    print(f"cycles: ESTIMATE (sim model). {len(specs)} kernels; new actions: {', '.join(NEW_ACTIONS)}")
    if specs:
        greedy_tables(specs, options, a, doc)

    heads = [s for s in a.headroom.split(",") if s]
    if heads:
        from ptxopt.kernels.corpus import get

        print(f"\n2. headroom with the new actions: exhaustive (<= {a.exhaustive_steps} passes) and random "
              f"({a.random_budget} evaluations) vs greedy, all {len(PASS_ACTIONS)} actions")
        print(f"   exhaustive is the oracle over pipelines of <= {a.exhaustive_steps} passes only: greedy may go "
              f"further (up to {a.max_steps})")
        print(f"{'kernel':<24}{'greedy %':>9}{'evals':>6}{'exh %':>8}{'evals':>6}{'random %':>9}{'evals':>6}  "
              f"best pipeline (exhaustive / random)")
        for kid in heads:
            spec = get(kid)
            g = search(spec, "greedy", PASS_ACTIONS, options, max_steps=a.max_steps)
            ex = search(spec, "exhaustive", PASS_ACTIONS, options, max_steps=a.exhaustive_steps)
            rn = search(spec, "random", PASS_ACTIONS, options, budget=a.random_budget, max_steps=a.max_steps)
            print(f"{kid:<24}{_pct(g['gain_pct']):>9}{g['evaluations']:>6}{_pct(ex['gain_pct']):>8}"
                  f"{ex['evaluations']:>6}{_pct(rn['gain_pct']):>9}{rn['evaluations']:>6}  "
                  f"{ex['pipeline'] or '(none)'}{' [' + ex['note'] + ']' if ex['note'] else ''} / "
                  f"{rn['pipeline'] or '(none)'}", flush=True)
            doc["headroom"].append({"kernel": kid, "greedy": _public(g), "exhaustive": _public(ex),
                                    "random": _public(rn)})
            _write(a.json, doc)
    doc["wall_s"] = round(time.perf_counter() - t_all, 1)
    print(f"\nwall {doc['wall_s']:.0f} s; every cycle figure is an ESTIMATE of the sim model")
    _write(a.json, doc)
    return 0


def greedy_tables(specs: list, options, a, doc: dict) -> None:
    """Tables 1, 3 and 4 over ``specs`` (written into ``doc`` as they come)."""
    print("\n1. greedy without vs with the new actions (gain = % of the baseline's estimated cycles)")
    print("   'bound pp': what greedy gains over 'with' when the launch_bounds actions are bound to the performance")
    print("   block (extra actions); run where the search's own launch_bounds actions are masked at the root ('=': not run)")
    print("   obj: thro(ughput, the manifest's performance launch) / late(ncy, one warp); /D: the baseline's")
    print("   estimate is the launch's DRAM-bandwidth bound (no rewrite that keeps the bytes moved changes it)")
    print(f"{'kernel':<30}{'obj':<7}{'without %':>10}{'with %':>8}{'extra pp':>9}{'bound pp':>9}{'evals':>7}  "
          f"pipeline without -> with")
    verdicts: dict[str, Counter] = {a_: Counter() for a_ in NEW_ACTIONS}
    why_inconclusive: dict[str, Counter] = {a_: Counter() for a_ in NEW_ACTIONS}
    masked_in_search: Counter = Counter()  # the evaluator changes the kernel, the search's mask says no
    costs = []
    for spec in specs:
        row = {"kernel": spec.id, "family": spec.family, "compiler": spec.compiler, "group": spec.group}
        try:
            wo = search(spec, "greedy", OLD_ACTIONS, options, max_steps=a.max_steps)
            wi = search(spec, "greedy", PASS_ACTIONS, options, max_steps=a.max_steps)
            mask = masked_at_root(wi)
            bound = bound_launch_bounds(spec)
            wb = wi
            if bound and all(mask.get(x) for x in NEW_ACTIONS if x.startswith("launch_bounds")):
                wb = search(spec, "greedy", PASS_ACTIONS + bound, options, max_steps=a.max_steps)
            v = verdicts_alone(spec, options)
            wu = None
            if a.unchecked and not wi["dram_bound"] and any(x["verdict"] == "inconclusive" for x in v.values()):
                wu = search(spec, "greedy", PASS_ACTIONS, replace(options, allow_unchecked=True),
                            max_steps=a.max_steps)
        except Exception as e:  # noqa: BLE001 - one kernel never stops the report
            row["error"] = f"{type(e).__name__}: {e}".splitlines()[0]
            print(f"{spec.id:<30}ERROR {row['error'][:120]}", flush=True)
            doc["kernels"].append(row)
            continue
        for act, verdict in v.items():
            verdicts[act][verdict["verdict"]] += 1
            if verdict["verdict"] == "inconclusive":
                why_inconclusive[act][verdict["kind"]] += 1
            if verdict["verdict"] not in ("no change", "refused") and mask.get(act):
                masked_in_search[act] += 1
        extra, extra_b = _diff(wi, wo), _diff(wb, wi)
        row.update(without=_public(wo), with_=_public(wi), extra_pp=extra, root_verdicts=v, root_mask=mask,
                   new_in_pipeline=[x for x in passes_of(wi["pipeline"]) if x in NEW_ACTIONS],
                   bound_actions=list(bound) if wb is not wi else [], with_bound=_public(wb), extra_bound_pp=extra_b,
                   new_in_bound_pipeline=[x for x in passes_of(wb["pipeline"])
                                          if x in NEW_ACTIONS or x.startswith("launch_bounds")])
        if wu is not None:
            row.update(with_unchecked=_public(wu), unchecked_pp=_diff(wu, wi))
        obj = (wi["objective"] or "?")[:4] + ("/D" if wo["dram_bound"] else "")
        evals = wo["evaluations"] + wi["evaluations"] + (wb["evaluations"] if wb is not wi else 0)
        print(f"{spec.id:<30}{obj:<7}{_pct(wo['gain_pct']):>10}{_pct(wi['gain_pct']):>8}{_pct(extra):>9}"
              f"{_pct(extra_b) if wb is not wi else '=':>9}{evals:>7}  {wo['pipeline'] or '(none)'} -> "
              f"{wi['pipeline'] or '(none)'}{' | bound: ' + wb['pipeline'] if wb is not wi else ''}"
              f"{'  ' + wi['error'] if wi['error'] else ''}"
              + (f"\n{'':<30}UNCHECKED (inconclusive accepted, not a result): {_pct(wu['gain_pct'])} %, "
                 f"{_pct(row['unchecked_pp'])} pp over 'with': {wu['pipeline'] or '(none)'} [{wu['verdict']}]"
                 if wu is not None else ""), flush=True)
        try:
            c = pass_cost(spec, bound)
            c["kernel"] = spec.id
            costs.append(c)
        except Exception as e:  # noqa: BLE001
            print(f"  pass cost: {type(e).__name__}: {e}", flush=True)
        row["refusals"] = refusals(spec, bound)
        doc["kernels"].append(row)
        _write(a.json, doc)  # after every kernel: a run stopped early keeps what it measured
    _summary(doc["kernels"])

    print("\n3. verdict of each new pass applied alone to the original (the evaluator's: prover, then "
          "interpreter at boundary trip counts)")
    cols = ("no change", "refused", "hints-only", "proved", "equal", "inconclusive", "differ")
    print(f"{'pass':<28}" + "".join(f"{c:>13}" for c in cols) + "  other")
    for act in NEW_ACTIONS:
        cnt = verdicts[act]
        other = {k: n for k, n in cnt.items() if k not in cols}
        print(f"{act:<28}" + "".join(f"{cnt.get(c, 0):>13}" for c in cols) + f"  {other or ''}")
        doc["verdicts"][act] = dict(cnt)
    print("   changed by the evaluator (launch bound) but masked at the search's root: "
          + (", ".join(f"{k} on {n}" for k, n in masked_in_search.items()) or "none"))
    doc["masked_in_search"] = dict(masked_in_search)
    print("   why inconclusive (an inconclusive candidate is never a search's best unless --allow-unchecked):")
    for act in NEW_ACTIONS:
        if why_inconclusive[act]:
            print(f"   {act:<28}" + "; ".join(f"{n}x {k}" for k, n in why_inconclusive[act].most_common()))
    doc["why_inconclusive"] = {k: dict(v) for k, v in why_inconclusive.items() if v}
    _print_refusals(doc["kernels"])

    print("\n4. pass cost (pass + print on a fresh parse, memos cleared) as a fraction of ptxas on the original, kernels it changes")
    print(f"{'pass':<28}{'kernels':>8}{'median wall':>13}{'max wall':>10}{'median CPU':>12}{'max CPU':>9}  worst kernel")
    for act in NEW_ACTIONS:
        rows = [(c["kernel"], c["passes"][act]) for c in costs if act in c["passes"]]
        if not rows:
            print(f"{act:<28}{0:>8}")
            continue
        w = sorted(r["wall_frac"] for _, r in rows)
        cp = sorted(r["cpu_frac"] for _, r in rows if r["cpu_frac"] is not None) or [float("nan")]
        worst = max(rows, key=lambda kr: kr[1]["wall_frac"])[0]
        print(f"{act:<28}{len(rows):>8}{w[len(w) // 2]:>13.1%}{w[-1]:>10.1%}{cp[len(cp) // 2]:>12.1%}{cp[-1]:>9.1%}"
              f"  {worst}")
        doc["pass_cost"][act] = {"kernels": len(rows), "median_wall_frac": w[len(w) // 2], "max_wall_frac": w[-1],
                                 "median_cpu_frac": cp[len(cp) // 2], "max_cpu_frac": cp[-1], "worst": worst}
    doc["pass_cost_rows"] = costs


def _write(path: str | None, doc: dict) -> None:
    if path:
        Path(path).write_text(json.dumps(doc, indent=1, default=str) + "\n")


def _print_refusals(rows: list[dict]) -> None:
    """Why each new pass left kernels unchanged: the commonest refusal reasons."""
    print("   why a pass changed nothing: kernels left unchanged, and the commonest refusal reasons (kernels giving it)")
    for act in NEW_ACTIONS:
        unchanged = [r for r in rows if "refusals" in r and not r["refusals"][act]["changed"]]
        reasons = Counter(k for r in unchanged for k in {_reason_kind(w) for w in r["refusals"][act]["refused"]})
        silent = sum(not r["refusals"][act]["refused"] for r in unchanged)
        top = "; ".join(f"{n}x {w}" for w, n in reasons.most_common(3))
        print(f"   {act:<28}{len(unchanged):>3} unchanged ({silent} without a refusal: nothing to do)  {top}")


def _summary(rows: list[dict]) -> None:
    """Headline of table 1: how many kernels the new actions helped, by how much, with which passes."""
    done = [r for r in rows if r.get("extra_pp") is not None]
    gained = [r for r in done if r["extra_pp"] > 1e-9]
    lost = [r for r in done if r["extra_pp"] < -1e-9]
    used = Counter(x for r in done for x in r["new_in_pipeline"])
    bound = [r for r in done if r.get("bound_actions") and r.get("extra_bound_pp") is not None]
    for act in (x for x in NEW_ACTIONS if x.startswith("launch_bounds")):
        legal = [r for r in done if act in r["root_mask"] and r["root_mask"][act] is None]
        chose = sum(act in r["new_in_pipeline"] for r in done)
        helped = sum(act in r["new_in_pipeline"] and r["extra_pp"] > 1e-9 for r in done)
        print(f"  {act}: legal at the search's root on {len(legal)} of {len(done)} kernels "
              f"({sum(r['compiler'] == 'nvcc' for r in legal)} nvcc); in greedy's pipeline on {chose}, "
              f"{helped} of them with a gain over 'without'")
    print(f"\n  {len(done)} kernels searched; the new actions raised greedy's gain on {len(gained)}, "
          f"lowered it on {len(lost)} (greedy is not monotone in its action set)")
    if gained:
        ex = sorted(r["extra_pp"] for r in gained)
        print(f"  extra gain where it helped: median {ex[len(ex) // 2]:.2f} pp, max {ex[-1]:.2f} pp "
              f"({max(gained, key=lambda r: r['extra_pp'])['kernel']})")
    print(f"  new passes in greedy's pipelines: {dict(used) or 'none'}")
    unc = [r for r in done if r.get("unchecked_pp") is not None]
    if unc:
        more = [r for r in unc if r["unchecked_pp"] > 1e-9]
        print(f"  inconclusive accepted (UNCHECKED, {len(unc)} kernels): greedy gains more on {len(more)}"
              + (" (" + ", ".join(f"{r['kernel']} +{r['unchecked_pp']:.2f} pp" for r in more) + ")" if more else ""))
    dram = [r for r in done if r["without"].get("dram_bound")]
    print(f"  {len(dram)} of {len(done)} baselines sit at the DRAM-bandwidth bound of their performance launch "
          f"(gain without/with there: {sum(r['without']['gain_pct'] > 1e-9 for r in dram)}/"
          f"{sum(r['with_']['gain_pct'] > 1e-9 for r in dram)} kernels above 0)")
    if bound:
        helped = [r for r in bound if r["extra_bound_pp"] > 1e-9]
        chose = sum(any(x.startswith("launch_bounds") for x in r["new_in_bound_pipeline"]) for r in bound)
        print(f"  launch_bounds bound to the performance block ({len(bound)} kernels where the search masks it): "
              f"raised greedy's gain over 'with' on {len(helped)}"
              + (f", max {max(r['extra_bound_pp'] for r in helped):.2f} pp" if helped else "")
              + f"; in greedy's pipeline on {chose}")
    by = defaultdict(list)
    for r in done:
        by[r["compiler"] if r["family"] != "gemm_tile" else "gemm_tile"].append(r["extra_pp"])
    for k, v in sorted(by.items()):
        print(f"  {k:<10} {len(v):>3} kernels, mean extra {sum(v) / len(v):.2f} pp, helped {sum(x > 1e-9 for x in v)}")


if __name__ == "__main__":
    sys.exit(main())
