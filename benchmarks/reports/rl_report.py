"""The learning layer's numbers, reproduced: BC accuracy, the policy against
search at equal budgets, generalisation to unseen families, and speed.

1. **BC accuracy** (leave-one-kernel-out) of the MLP and of a random forest
   on the same features, on the recorded greedy trajectories of the
   training families (re-recorded after the sim calibration of issue 16:
   73.1% MLP, 70.9% random forest; on the earlier model 64.5% and 59.1%).
2. **Policy vs search on the training family** (gemm_tile): greedy search;
   one greedy-decoded rollout; best of 8 sampled; random and greedy search
   at the policy's budget. Targets: best-of-8 >= greedy's mean improvement
   with <= half its evaluations; greedy-decoded >= 90% of greedy's.
3. **Generalisation**: the same on families never trained on (default:
   every hand-written family but gemm_tile and elementwise). Target: the
   policy beats random search at equal budget.
3b. **Per template group** (``--parts groups``): the same per group of the
   corpus (``ptxopt.kernels.corpus`` groups, which the generated families of issue 30
   fill), held-out groups first -- a group is held out when none of its
   kernels' families was trained on; softmax, layernorm and rmsnorm are one
   group, so a policy trained on one is not tested "unseen" on another. At
   most ``--per-group`` kernels per group (round-robin over its families).
4. **Speed**: policy inference per step; one GRPO epoch (G=8) over the
   gemm_tile kernels in a fresh process on a warm evaluation cache (rollouts
   -- mostly computing action masks, i.e. applying every pass to every new
   state -- and the update timed apart).

Cycles are the sim model's ESTIMATE. Usage:
``python benchmarks/reports/rl_report.py --checkpoint runs/train/policy.pt [--parts bc,gemm,heldout,groups,speed] [--per-group N] [--json OUT]``
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import numpy as np  # noqa: E402
import torch  # noqa: E402

from ptxopt.kernels.corpus import select  # noqa: E402
from ptxopt.evaluate import Candidate, default_cache_path  # noqa: E402
from ptxopt.search import EvalOptions  # noqa: E402
from ptxopt_rl.bc import leave_one_kernel_out, load_dataset  # noqa: E402
from ptxopt_rl.checkpoint import load_policy, load_trainable  # noqa: E402
from ptxopt_rl.env import PipelineEnv  # noqa: E402
from ptxopt_rl.grpo import GRPOConfig, GRPOTrainer  # noqa: E402
from ptxopt_rl.protocol import compare  # noqa: E402
from ptxopt_rl.train import DEFAULT_TRAJECTORIES  # noqa: E402

TRAIN_FAMILIES = ("gemm_tile", "elementwise")


def heldout_selector() -> str:
    """The hand-written families never trained on (the issue-16 held-out set;
    the generated families are reported per group, see :func:`group_order`)."""
    fams = sorted({k.family for k in select("all") if not k.generated} - set(TRAIN_FAMILIES))
    return ",".join(fams)


def group_order(train_families=TRAIN_FAMILIES) -> list[tuple[str, bool]]:
    """``(group, held_out)`` for every template group of the corpus, held-out
    groups first (a group is seen when any of its kernels' families was trained on)."""
    groups: dict[str, bool] = {}
    for k in select("all"):
        groups[k.group] = groups.get(k.group, True) and k.family not in train_families
    return sorted(groups.items(), key=lambda g: (not g[1], g[0]))


def group_kernels(group: str, per_group: int) -> list:
    """At most *per_group* kernels of *group*, round-robin over its families
    (each family's first kernel, then its second, ...; manifest order)."""
    specs, seen = select(f"group:{group}"), {}
    rank = []
    for i, k in enumerate(specs):
        seen[k.family] = seen.get(k.family, 0) + 1
        rank.append((seen[k.family], i))
    return [specs[i] for _, i in sorted(rank)][:per_group]


def show(name: str, res: dict) -> None:
    s = res["summary"]
    print(f"\n{name}: {len(res['kernels'])} kernels")
    print(f"  {'method':<16}{'mean impr %':>12}{'median %':>10}{'evals/kernel':>14}")
    for m, v in s.items():
        if m != "targets":
            print(f"  {m:<16}{v['mean_improvement_pct']:>12.2f}{v['median_improvement_pct']:>10.2f}"
                  f"{v['mean_evaluations']:>14.1f}")
    t = s.get("targets")
    if t:
        print(f"  best-of-8/greedy improvement {t['best_of_k_vs_greedy_improvement']:.3f} (target >= 1), evaluations "
              f"{t['best_of_k_vs_greedy_evaluations']:.3f} (target <= 0.5); greedy-decoded/greedy "
              f"{t['greedy_decoded_vs_greedy_improvement']:.3f} (target >= 0.9); beats random at equal budget: "
              f"{t['best_of_k_beats_random_at_equal_budget']}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--checkpoint", required=True)
    ap.add_argument("--parts", default="bc,gemm,heldout,speed")
    ap.add_argument("--trajectories", default=str(DEFAULT_TRAJECTORIES))
    ap.add_argument("--cache", default=str(default_cache_path()))
    ap.add_argument("--samples", type=int, default=8)
    ap.add_argument("--temperature", type=float, default=0.5, help="of the K-1 sampled rollouts of best-of-K")
    ap.add_argument("--per-group", type=int, default=4, help="kernels per template group (--parts groups)")
    ap.add_argument("--groups", default=None, help="comma list: only these template groups (--parts groups)")
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    parts = args.parts.split(",")
    options = EvalOptions(cache=args.cache)
    doc: dict = {"checkpoint": args.checkpoint, "cycles_kind": "ESTIMATE"}
    policy, meta = load_policy(args.checkpoint)
    print(f"checkpoint {args.checkpoint}: stage {meta.get('stage')}, epoch {meta.get('epoch')}")

    if "bc" in parts:
        data = load_dataset([args.trajectories], families=["gemm_tile"])
        t0 = time.perf_counter()
        lk = leave_one_kernel_out(data)
        doc["bc"] = {k: v for k, v in lk.items() if k != "per_kernel"}
        print(f"\nBC leave-one-kernel-out on gemm_tile greedy trajectories ({lk['steps']} steps, {lk['kernels']} "
              f"kernels): MLP {100 * lk['mlp_accuracy']:.1f}%  random forest {100 * lk['random_forest_accuracy']:.1f}%"
              f"  majority {100 * lk['majority_accuracy']:.1f}%  ({time.perf_counter() - t0:.0f} s)")

    for part, selector in (("gemm", "gemm_tile"), ("heldout", heldout_selector())):
        if part not in parts:
            continue
        specs = select(selector)
        t0 = time.perf_counter()
        res = compare(args.checkpoint, [(Candidate.from_corpus(s), s.family) for s in specs], options,
                      samples=args.samples, temperature=args.temperature)
        res["wall_s"] = time.perf_counter() - t0
        doc[part] = res
        show(f"{part} ({selector})", res)

    if "groups" in parts:
        doc["groups"] = {}
        print(f"\nper template group (held-out first; at most {args.per_group} kernels each):")
        for group, held_out in group_order():
            if args.groups and group not in args.groups.split(","):
                continue
            specs = group_kernels(group, args.per_group)
            t0 = time.perf_counter()
            res = compare(args.checkpoint, [(Candidate.from_corpus(s), s.family) for s in specs], options,
                          samples=args.samples, temperature=args.temperature)
            res["wall_s"] = time.perf_counter() - t0
            res["held_out"] = held_out
            doc["groups"][group] = res
            show(f"{group} ({'held out' if held_out else 'trained on'}; {', '.join(s.id for s in specs)})", res)

    if "speed" in parts:
        env = PipelineEnv(["gemm_tile_8x8x8"], options=options)
        obs, info = env.reset()
        mask = info["action_mask"]
        n = 2000
        t0 = time.perf_counter()
        for _ in range(n):
            policy.act(obs, mask, temperature=1.5)
        per_step = (time.perf_counter() - t0) / n
        kernels = [s.id for s in select("gemm_tile")]
        env = PipelineEnv(kernels, options=options)
        trainer = GRPOTrainer(load_trainable(args.checkpoint)[0], env, kernels, GRPOConfig(epochs=1, eval_every=0, checkpoint_every=0),
                              Path("/tmp/ptxopt_rl_speed"))
        row = trainer.epoch(1)
        doc["speed"] = {"inference_ms_per_step": 1000 * per_step, "grpo_epoch": row}
        print(f"\npolicy inference: {1000 * per_step:.3f} ms per step (one observation, CPU)")
        print(f"one GRPO epoch, {len(kernels)} kernels x G=8, fresh process, warm cache: {row['wall_s']:.1f} s "
              f"(rollouts {row['rollout_s']:.1f} s, update {row['update_s']:.2f} s; {row['evaluations']} modules "
              f"measured, {row['cache_hits']} of them from the cache)")
    if args.json:
        Path(args.json).write_text(json.dumps(doc, indent=2, default=float) + "\n")


if __name__ == "__main__":
    np.set_printoptions(precision=3)
    torch.manual_seed(0)
    main()
