"""Record greedy trajectories on the current reward for a stratified corpus subset: one command, resumable.

The ranker (:mod:`ptxopt.search.ranker`) trains on greedy trajectories whose
cycles are the sim model's ESTIMATES; a change to the model changes every
label, so the file is named for the reward it holds::

    corpus/trajectories/greedy_default_objective_<backend>_<digest12>.jsonl

(``<digest12>``: the first 12 hex digits of the sim model's source digest,
:func:`ptxopt.search.trajectory.reward_model`; every step also records the
full ``reward_model``). Each kernel is searched under its default objective
(throughput on its manifest performance launch where it has one).

Subset: ``--per-family`` generated kernels of each family, evenly spaced
over the family's variants (the same ids on every run), then every
hand-written kernel (``cuda_*``, ``triton_*``). Kernels are searched in
chunks (``ptxopt search LIST --record PART --cache CACHE``) into a work
folder (one per reward model); a rerun skips every kernel a finished part
already holds and reuses the cache, so an interrupted recording resumes
where it stopped, also with another ``--per-family``. When every kernel is
there the parts are concatenated, in subset order, into the output file.

Usage (nice it on a shared machine)::

    nice -n 10 python benchmarks/studies/record_trajectories.py [--per-family 2] [--per-group N] [--family FAMILY=N ...] [--chunk 6] [-j 2]
        [--work runs/record] [--out FILE] [--list]
"""

from __future__ import annotations

import argparse
import hashlib
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from ptxopt.search.trajectory import read_jsonl, reward_model  # noqa: E402


def hand_written(k) -> bool:
    return k.id.startswith(("cuda_", "triton_"))


def subset(per_family: int, per_group: int | None = None, more=None) -> list[str]:
    """``per_family`` evenly spaced variants of each generated family, then every hand-written kernel.

    ``more``: ``(family, count)`` pairs (or a dict), families recorded with more variants than
    ``per_family`` (the first ``per_family`` picks stay the same, the others follow them at the end of the
    list, so that a recording made with fewer resumes into this one). A family given twice grows in steps:
    ``gemm_tile=16`` then ``gemm_tile=40`` keeps the 16 picks of the first and adds 24 (evenly spaced
    picks of 40 differ from those of 16, so one count alone would drop some of a recording made with 16).

    ``per_group``: at most that many of those per template group (the first ones in that order: the
    generated kernels, then the hand-written in manifest order), interleaved round by round -- every
    group's first kernel, then every group's second, ... -- so that a recording cut short still holds
    every group it reached."""
    from ptxopt.kernels.corpus import load_manifest

    ks = load_manifest()
    out: list[str] = []
    fams: dict[str, list[str]] = {}
    for k in ks:
        if not hand_written(k):
            fams.setdefault(k.family, []).append(k.id)
    for fam in sorted(fams):
        out.extend(_spaced(sorted(fams[fam]), per_family))
    out += [k.id for k in ks if hand_written(k)]
    more = list(more.items()) if isinstance(more, dict) else list(more or ())
    for fam, n in sorted(more, key=lambda fn: fn[0]):  # stable: a family's counts in the order given
        if fam not in fams:
            raise SystemExit(f"--family {fam}: no generated family of that name ({', '.join(sorted(fams))})")
        ids = sorted(fams[fam])
        members = set(ids)
        have = [k for k in out if k in members]
        extra = [k for k in dict.fromkeys(_spaced(ids, n) + ids) if k not in have]
        out.extend(extra[:max(0, min(n, len(ids)) - len(have))])
    if per_group is None:
        return out
    group = {k.id: k.group for k in ks}
    by_group: dict[str, list[str]] = {}
    for kid in out:
        by_group.setdefault(group[kid], []).append(kid)
    return [ids[r] for r in range(per_group) for ids in by_group.values() if r < len(ids)]


def _spaced(ids: list[str], n: int) -> list[str]:
    n = min(n, len(ids))
    return [ids[(2 * i + 1) * len(ids) // (2 * n)] for i in range(n)] if n else []


def default_out(backend: str = "sim") -> Path:
    model = reward_model(backend)
    digest = model.split(":", 1)[1][:12] if ":" in model else "unversioned"
    return ROOT / "corpus" / "trajectories" / f"greedy_default_objective_{backend}_{digest}.jsonl"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--per-family", type=int, default=2)
    ap.add_argument("--per-group", type=int, default=None,
                    help="at most N of those kernels per template group, interleaved over the groups")
    ap.add_argument("--family", action="append", default=[], metavar="FAMILY=N",
                    help="record N variants of this generated family (repeatable; a family given again grows from "
                         "its earlier picks); the others get --per-family")
    ap.add_argument("--chunk", type=int, default=6, help="kernels per search command (the resume granularity)")
    ap.add_argument("-j", "--workers", type=int, default=2)
    ap.add_argument("--work", default=str(ROOT / "runs" / "record"))
    ap.add_argument("--out", default=None)
    ap.add_argument("--list", action="store_true", help="print the subset and the output file, search nothing")
    ap.add_argument("--partial", action="store_true",
                    help="search nothing more: write the output from the kernels recorded so far")
    args = ap.parse_args(argv)
    try:
        more = [(f, int(n)) for f, n in (x.split("=", 1) for x in args.family)]
    except ValueError:
        ap.error("--family takes FAMILY=N")
    kernels = subset(args.per_family, args.per_group, more)
    model = reward_model("sim")
    out = Path(args.out) if args.out else default_out()
    work = Path(args.work) / model.replace(":", "_").replace("/", "_")
    print(f"{len(kernels)} kernels, reward {model} -> {out}", flush=True)
    if args.list:
        print(",".join(kernels))
        return 0
    work.mkdir(parents=True, exist_ok=True)
    done = {s.kernel for p in sorted(work.glob("part*.jsonl")) for s in read_jsonl(p)}
    todo = [k for k in kernels if k not in done]
    chunks = [todo[i:i + args.chunk] for i in range(0, len(todo), args.chunk)]
    print(f"{len(kernels) - len(todo)} already recorded in {work}", flush=True)
    t0 = time.time()
    if args.partial:
        print(f"--partial: {len(todo)} of {len(kernels)} kernels not recorded: {','.join(todo)}", flush=True)
        chunks = []
    for n, chunk in enumerate(chunks):
        part = work / f"part_{hashlib.sha1(','.join(chunk).encode()).hexdigest()[:12]}.jsonl"
        tmp = part.with_suffix(".partial")
        tmp.unlink(missing_ok=True)
        cmd = [sys.executable, "-c", "import sys; from ptxopt.cli import main; sys.argv[0] = 'ptxopt'; main()",
               "search", ",".join(chunk), "--backend", "sim", "--record", str(tmp), "--cache", str(work / "cache"),
               "-j", str(args.workers), "-q"]
        t = time.time()
        r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
        if r.returncode not in (0, 1) or not tmp.exists():
            sys.stderr.write(r.stdout[-2000:] + r.stderr[-2000:])
            print(f"chunk {n} failed (exit {r.returncode}); rerun to resume", file=sys.stderr)
            return 1
        got = {s.kernel for s in read_jsonl(tmp)}
        if set(chunk) - got:
            print(f"chunk {n}: no trajectory for {sorted(set(chunk) - got)} (baseline failed?)", file=sys.stderr)
        tmp.rename(part)
        print(f"chunk {n + 1}/{len(chunks)}: {len(chunk)} kernels in {time.time() - t:.0f} s "
              f"(total {time.time() - t0:.0f} s)", flush=True)
    order = {k: i for i, k in enumerate(kernels)}
    steps = [s for p in sorted(work.glob("part*.jsonl")) for s in read_jsonl(p) if s.kernel in order]
    models = {s.reward_model for s in steps}
    if models != {model}:
        print(f"parts hold rewards {sorted(map(str, models))}, not only {model}: remove {work} and rerun",
              file=sys.stderr)
        return 1
    steps.sort(key=lambda s: (order.get(s.kernel, len(order)), s.episode, s.step))
    from ptxopt.search.trajectory import write_jsonl

    write_jsonl(steps, out)
    print(f"{len({s.kernel for s in steps})} kernels, {len(steps)} steps -> {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
