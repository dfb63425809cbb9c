"""How many corpus kernels change their best pipeline under the throughput
objective when loop trip counts come from the performance launch instead of the
check launch.  ESTIMATES.

For every corpus kernel with a PTX loop (or the ids given):

1. the original's trip counts from both sources
   (:func:`ptxopt.measure.loop_slice.trip_counts_for` with and without the
   performance launch -- the old behaviour stays selectable that way, here
   only); where the two are identical the greedy search sees the same
   estimates and cannot pick differently, so it is not re-run (the passes
   preserve what each loop computes, so their candidates' counts are equal too);
2. otherwise a greedy search (the project's rule: try every pass of
   :func:`ptxopt.passes.pass_names` on the current best, keep the one with the
   lowest estimate, at most ``--max-steps`` steps, stop when none improves) is
   run twice on the same candidates, once per trip-count source, each
   candidate scored by the ``sim`` model under the throughput objective on the
   kernel's performance launch.  Candidates are legality-checked by the pass
   manager; the equivalence check is skipped (it is the same for both runs).

Prints one row per kernel and the count of kernels whose best pipeline
changed.  Run under ``nice``; every figure is an ESTIMATE::

    PYTHONPATH=$PWD python benchmarks/studies/sim_trip_source.py [IDS] [--max-steps 3] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import sys
import time


def _score_fn(spec, perf):
    """``ptx text -> {"performance": cycles, "check": cycles, ...}``, memoised per text.

    The two loop profiles are taken once, on the original: the passes keep
    every loop's control (labels and trip counts), so a candidate's counts are
    the original's, mapped onto the candidate's own SASS with its own loop
    signatures; a candidate whose loop headers differ gets both derived anew."""
    import dataclasses

    from ptxopt.measure.backend import MeasureJob
    from ptxopt.measure.disasm import disassemble_many
    from ptxopt.measure.loop_slice import _map, performance_loop_profile, trip_counts_for
    from ptxopt.measure.measured_trips import loop_headers, loop_profile, loop_signatures
    from ptxopt.measure.sim import _objective_kw
    from ptxopt.ptx.parser import parse
    from ptxopt.sim import simulate
    from ptxopt.sim.sass_decode import decode
    from ptxopt.toolchain import compile_ptx

    module0 = parse(spec.ptx_text(), spec.id)
    headers0 = loop_headers(module0, spec.entry)
    profiles = {}
    for source, get in (("performance", lambda: performance_loop_profile(module0, spec.entry, perf, spec=spec)),
                        ("check", lambda: loop_profile(module0, spec.entry, spec=spec))):
        try:
            profiles[source] = get()
        except Exception:  # no profile: trip_counts_for's own fallback applies per candidate
            profiles[source] = None
    memo: dict = {}

    def score_many(texts: list[str]) -> None:
        """Score every new text, with one nvdisasm run for all of them."""
        todo = []
        for text in dict.fromkeys(texts):
            if text in memo:
                continue
            try:
                todo.append((text, compile_ptx(text, spec.arch)))
            except Exception as e:  # ptxas refused: not a candidate
                memo[text] = {"error": type(e).__name__}
        listings = disassemble_many([c.cubin for _, c in todo])
        for (text, compiled), listing in zip(todo, listings):
            if isinstance(listing, Exception):
                memo[text] = {"error": type(listing).__name__}
                continue
            memo[text] = _score(text, compiled, listing)

    def score(text: str) -> dict:
        score_many([text])
        return memo[text]

    def _score(text, compiled, listing) -> dict:
        out: dict = {}
        program = decode(listing, spec.entry)
        module = parse(text, spec.id)
        job = MeasureJob(text, spec.arch, spec, spec.entry, compiled, module, None, True,
                         objective="throughput", performance=perf, check_block=spec.launch.block)
        kw = _objective_kw(job)
        same_loops = loop_headers(module, spec.entry) == headers0
        for source, p in (("performance", perf), ("check", None)):
            prof = profiles[source]
            trips = None
            if prof is not None and same_loops:
                try:
                    trips, how = _map(program, dataclasses.replace(
                        prof, signatures=loop_signatures(module, spec.entry))), source + " launch (original's counts)"
                except Exception:
                    trips = None
            if trips is None:
                trips, how, _ = trip_counts_for(program, module, spec.entry, check={"spec": spec}, performance=p)
            r = simulate(program, compiled, trips or None, **kw)
            out[source] = r.cycles
            out[source + "_trips"] = trips
            out[source + "_how"] = how
        return out

    score.many = score_many
    return score


def greedy(spec, perf, score, source: str, max_steps: int) -> tuple[str, float, float]:
    """``(best pipeline, best cycles, original cycles)`` under trip counts from ``source``."""
    from ptxopt import emit, parse
    from ptxopt.passes import pass_names
    from ptxopt.passes.passmanager import PassManager
    from ptxopt.passes.pipeline import Pipeline

    text0 = spec.ptx_text()
    base = score(text0)[source]
    seq: list[str] = []
    best = base
    for _ in range(max_steps):
        step = None
        cands = []
        for p in pass_names():
            if p in seq:
                continue
            pipe = ",".join(seq + [p])
            try:
                cands.append((p, emit(PassManager(Pipeline.parse(pipe)).run(parse(text0, spec.id)).module)))
            except Exception:  # conflicting family, refused as illegal, missing parameter
                continue
        score.many([t for _, t in cands])
        for p, text in cands:
            s = score(text)
            c = s.get(source)
            if c is not None and c < best and (step is None or c < step[1]):
                step = (p, c)
        if step is None:
            break
        seq.append(step[0])
        best = step[1]
    return ",".join(seq), best, base


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("ids", nargs="?", default="all", help="corpus selector (default: all)")
    ap.add_argument("--max-steps", type=int, default=3)
    ap.add_argument("--json", metavar="OUT")
    args = ap.parse_args(argv)

    from ptxopt.kernels.corpus import select
    from ptxopt.evaluate.candidate import _manifest_performance
    from ptxopt.measure.measured_trips import loop_headers
    from ptxopt.ptx.parser import parse

    t0 = time.perf_counter()
    rows = []
    print(f"{'kernel':34} {'trips':>9}  {'best (performance launch)':38} {'best (check launch)':38} changed")
    for spec in select(args.ids):
        if not loop_headers(parse(spec.ptx_text(), spec.id), spec.entry):
            continue
        perf = _manifest_performance(spec)
        if perf is None:
            continue
        score = _score_fn(spec, perf)
        s0 = score(spec.ptx_text())
        if "error" in s0:
            continue
        row = {"kernel": spec.id, "perf_how": s0["performance_how"], "check_how": s0["check_how"]}
        if s0["performance_trips"] == s0["check_trips"]:
            row.update(same_trips=True, changed=False)
            print(f"{spec.id:34} {'same':>9}  (greedy not re-run: identical estimates)", flush=True)
        else:
            new = greedy(spec, perf, score, "performance", args.max_steps)
            old = greedy(spec, perf, score, "check", args.max_steps)
            row.update(same_trips=False, performance=new, check=old, changed=new[0] != old[0])
            print(f"{spec.id:34} {'differ':>9}  {new[0] or '(none)':38} {old[0] or '(none)':38} "
                  f"{'YES' if row['changed'] else 'no'}", flush=True)
        rows.append(row)
    differ = [r for r in rows if not r["same_trips"]]
    changed = [r for r in rows if r["changed"]]
    print(f"{len(rows)} kernels with loops; trip counts differ between the launches on {len(differ)}; "
          f"best pipeline (greedy, max {args.max_steps} steps, throughput) changed on {len(changed)}: "
          f"{', '.join(r['kernel'] for r in changed) or '-'}")
    print(f"({time.perf_counter() - t0:.0f} s; every cycle figure is an ESTIMATE)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main())
