"""The training schedules behind ``ptxopt train``: BC, then GRPO.

* ``bc_only``: behaviour cloning on greedy trajectories (seconds).
* ``quick``:   BC, then 3 GRPO epochs (G=4) on 2 small kernels (minutes).
* ``full``:    BC, then the full GRPO schedule on the training kernels.

Every schedule writes ``OUT/bc.pt`` and (GRPO) ``OUT/policy.pt``, the GRPO
log ``OUT/grpo_log.csv`` and curves ``OUT/grpo_curves.png``, and a
``OUT/train.json`` summary. Interrupted during GRPO (Ctrl-C), ``run_grpo``
raises :class:`rl.grpo.TrainingInterrupted` once the last finished epoch's
policy and the curves are written; the summary is then the caller's.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Callable, Sequence

from ptxopt.kernels.corpus import corpus_file
from ptxopt.search import EvalOptions

from .bc import accuracy, leave_one_kernel_out, load_dataset, train_bc
from .checkpoint import save_policy
from .env import PipelineEnv
from .grpo import GRPOConfig, GRPOTrainer

#: The committed greedy trajectories (``ptxopt search gemm_tile --record``) used by default.
DEFAULT_TRAJECTORIES = corpus_file("trajectories", "greedy_sm_89.jsonl")  # the checkout's or the installed package's

QUICK_KERNELS = ("gemm_tile_2x2x2", "gemm_tile_4x4x4")


def run_bc(trajectories: Sequence[str | Path], out: Path, *, families=None, kernels=None, epochs: int = 300,
           seed: int = 0, loko: bool = False, label_temperature: float = 0.0,
           log: Callable[[str], None] = print) -> tuple[Path, dict]:
    t0 = time.perf_counter()
    data = load_dataset(trajectories, families=families, kernels=kernels)
    policy = train_bc(data, epochs=epochs, seed=seed, label_temperature=label_temperature)
    report = {"steps": len(data), "kernels": len(set(data.kernels)), "label_temperature": label_temperature,
              "train_accuracy": accuracy(policy, data),
              "bc_seconds": time.perf_counter() - t0}
    log(f"BC: {report['steps']} steps from {report['kernels']} kernels, training accuracy "
        f"{100 * report['train_accuracy']:.1f}% ({report['bc_seconds']:.1f} s)")
    if loko:
        t1 = time.perf_counter()
        lk = leave_one_kernel_out(data, epochs=epochs, seed=seed)
        report["leave_one_kernel_out"] = {k: v for k, v in lk.items() if k != "per_kernel"}
        log(f"leave-one-kernel-out accuracy: MLP {100 * lk['mlp_accuracy']:.1f}%  random forest "
            f"{100 * lk['random_forest_accuracy']:.1f}%  majority {100 * lk['majority_accuracy']:.1f}%  "
            f"({time.perf_counter() - t1:.0f} s)")
    path = save_policy(out / "bc.pt", policy, meta={"stage": "bc", "trajectories": [str(t) for t in trajectories],
                                                    "families": list(families or []), "bc": report})
    return path, report


def run_grpo(bc_path: Path, kernels: Sequence[str], out: Path, cfg: GRPOConfig, options: EvalOptions,
             log: Callable[[str], None] = print, *, executor=None, workers: int = 0) -> tuple[Path, list[dict]]:
    """GRPO from the BC checkpoint; ``executor``/``workers`` (:func:`ptxopt.executor.make_executor`):
    the groups' rollouts through an executor (rl.remote) instead of this process."""
    from .checkpoint import load_trainable

    policy, meta = load_trainable(bc_path)
    env = PipelineEnv(list(kernels), options=options, max_steps=cfg.max_steps)
    ex = None
    if executor is not None or workers > 0:
        from ptxopt.executor import make_executor

        ex = make_executor(executor, workers)
    try:
        trainer = GRPOTrainer(policy, env, kernels, cfg, out, log=log, executor=ex)
        path = trainer.train(meta={"bc": meta.get("bc"), "trajectories": meta.get("trajectories")})
    finally:
        if ex is not None:
            ex.close()
    return path, trainer.rows


def write_summary(out: Path, doc: dict) -> None:
    from ptxopt.support.outputs import write_atomic

    write_atomic(out / "train.json", json.dumps(doc, indent=2, default=str) + "\n")


__all__ = ["run_bc", "run_grpo", "write_summary", "DEFAULT_TRAJECTORIES", "QUICK_KERNELS"]
