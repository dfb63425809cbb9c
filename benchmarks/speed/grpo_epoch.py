"""How long does one GRPO epoch take with a warm evaluation cache?

The target: one epoch over the 68 gemm_tile kernels (G=8 rollouts each,
warm cache, fresh process) at least 3x faster than the recorded 30 s
baseline. With a warm cache no candidate is compiled or interpreted: what
is left is the search-state work (parsing, the action mask -- every pass
applied to every state visited --, printing), the policy and the GRPO
update, which is what this benchmark times.

Each measurement runs in a **fresh process** (``subprocess``), so no memo
survives from the warm-up; the warm-up itself (``--warm``, once per cache)
runs the same epoch to fill the cache and is not timed. The checkpoint is
the committed policy; greedy evaluation after the epoch is off
(``eval_every=0``) so only the epoch itself is timed.

Usage::

    python benchmarks/speed/grpo_epoch.py [--kernels gemm_tile] [--cache PATH] [--reps 2]

prints rollout, update and wall seconds per fresh-process epoch, the
evaluations it still ran (0 when the cache was warm) and the best wall time.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CHECKPOINT = ROOT / "corpus" / "policies" / "gemm_elementwise_sm_89.pt"
BEFORE_S = 30.0  # the figure for one epoch before this work


def one_epoch(selector: str, cache: str, group: int) -> dict:
    sys.path.insert(0, str(ROOT))
    from ptxopt.kernels.corpus import select
    from ptxopt.search.meter import EvalOptions
    from ptxopt_rl.checkpoint import load_trainable
    from ptxopt_rl.env import PipelineEnv
    from ptxopt_rl.grpo import GRPOConfig, GRPOTrainer

    kernels = [k.id for k in select(selector)]
    t0 = time.perf_counter()
    policy, _meta = load_trainable(CHECKPOINT)
    env = PipelineEnv(kernels, options=EvalOptions(cache=cache))
    cfg = GRPOConfig(epochs=1, group_size=group, eval_every=0, checkpoint_every=0)
    with tempfile.TemporaryDirectory() as out:
        row = GRPOTrainer(policy, env, kernels, cfg, out).epoch(1)
    row["process_s"] = time.perf_counter() - t0
    row["kernels"] = len(kernels)
    return row


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernels", default="gemm_tile", help="corpus selector (default: the 68 gemm tiles)")
    ap.add_argument("--cache", default=None, help="evaluation cache to use (default: a new temporary one)")
    ap.add_argument("--group", type=int, default=8)
    ap.add_argument("--reps", type=int, default=2, help="fresh-process epochs to time")
    ap.add_argument("--no-warm-up", action="store_true", help="the cache is already warm: skip the warm-up epoch")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(one_epoch(args.kernels, args.cache, args.group), default=float))
        return 0
    tmp = None
    if args.cache is None:
        tmp = tempfile.TemporaryDirectory()
        args.cache = str(Path(tmp.name) / "eval.sqlite")
    cmd = [sys.executable, __file__, "--child", "--kernels", args.kernels, "--cache", args.cache,
           "--group", str(args.group)]
    if not args.no_warm_up:
        print(f"warm-up epoch (fills {args.cache}; not timed) ...", flush=True)
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    walls = []
    for r in range(args.reps):
        row = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout.splitlines()[-1])
        walls.append(row["wall_s"])
        print(f"epoch {r + 1}: {row['kernels']} kernels x G={args.group}: rollout {row['rollout_s']:.1f} s, "
              f"update {row['update_s']:.1f} s, wall {row['wall_s']:.1f} s (process {row['process_s']:.1f} s), "
              f"evaluations {row['evaluations']}, cache hits {row['cache_hits']}")
    best = min(walls)
    print(f"best epoch {best:.1f} s; before: {BEFORE_S:.0f} s -> {BEFORE_S / best:.1f}x faster (target >= 3x)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
