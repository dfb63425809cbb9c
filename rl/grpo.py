"""GRPO: group-relative policy optimisation over pass pipelines.

Per epoch, for each kernel of the batch, G rollouts are sampled at the
exploring temperature; an episode's return is the sum of its step rewards
(the log speedup of its pipeline minus 0.005 per pass). Its advantage is
its return minus the median return of *its own group* (so a kernel where
every pipeline helps a lot does not drown one where little helps), then
z-normalised over the whole batch. The policy is updated with the clipped
surrogate (epsilon 0.2) of PPO, on every step of every episode with the
episode's advantage, plus ``beta`` times the KL divergence from the frozen
behaviour-cloned policy (computed exactly over the masked actions); no
value network. Hyper-parameters are :class:`GRPOConfig` fields, defaults
from BRIEF section 5.

Rollouts go through :class:`rl.env.PipelineEnv`, which keeps every kernel's
explored states and measured results for the whole run, so later epochs
spend evaluations only on modules never seen before.

Ctrl-C keeps what finished: the last finished epoch's weights go to
``policy.pt`` (an epoch cut short is rolled back), the curves are drawn
from the finished epochs, and :class:`TrainingInterrupted` (a
``KeyboardInterrupt``) tells the caller how many epochs that is, so that
minutes of rollouts are not lost to one keystroke.
"""

from __future__ import annotations

import copy
import csv
import os
import signal
import statistics
import threading
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
import torch

from .checkpoint import save_policy
from .env import PipelineEnv
from .policy import Policy
from .rollout import EXPLOIT_T, EXPLORE_T, Episode, batch_tensors, rollout


@dataclass
class GRPOConfig:
    epochs: int = 20
    group_size: int = 8  # G rollouts per kernel
    batch_kernels: int = 0  # kernels per epoch (0: all)
    clip_eps: float = 0.2
    kl_beta: float = 0.01
    explore_temperature: float = EXPLORE_T
    exploit_temperature: float = EXPLOIT_T
    lr: float = 3e-4
    updates_per_epoch: int = 4  # gradient steps on each epoch's rollouts
    max_grad_norm: float = 1.0
    max_steps: int = 6
    eval_every: int = 1  # greedy-decoded evaluation on the training kernels (0: never)
    checkpoint_every: int = 5
    seed: int = 0


class TrainingInterrupted(KeyboardInterrupt):
    """Ctrl-C during GRPO, raised after what finished was written: ``epochs_done``,
    their log ``rows``, and ``path`` (policy.pt; None when no epoch finished)."""

    def __init__(self, epochs_done: int, rows: list[dict], path: Path | None):
        super().__init__(f"interrupted after {epochs_done} GRPO epochs")
        self.epochs_done, self.rows, self.path = epochs_done, rows, path


@contextmanager
def shielded():
    """A second Ctrl-C or SIGTERM while what finished is being written is ignored (main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = signal.signal(signal.SIGINT, signal.SIG_IGN)
    old_term = signal.signal(signal.SIGTERM, signal.SIG_IGN)  # SIGTERM takes the Ctrl-C path (ptxopt.cli.termination)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old)
        signal.signal(signal.SIGTERM, old_term)


def group_advantages(returns: Sequence[Sequence[float]]) -> list[np.ndarray]:
    """Return minus its group's median, then z-normalised over the batch."""
    centred = [np.asarray(g, dtype=np.float64) - float(np.median(g)) for g in returns]
    flat = np.concatenate(centred) if centred else np.zeros(0)
    std = float(flat.std()) if len(flat) else 0.0
    if std < 1e-8:
        return [np.zeros_like(c) for c in centred]
    mean = float(flat.mean())
    return [(c - mean) / std for c in centred]


def masked_kl(logp: torch.Tensor, ref_logp: torch.Tensor, masks: torch.Tensor) -> torch.Tensor:
    """KL(pi || pi_ref) per state, over the legal actions only."""
    p = logp.exp()
    terms = torch.where(masks, p * (logp - ref_logp), torch.zeros_like(p))
    return terms.sum(dim=-1)


def masked_entropy(logp: torch.Tensor, masks: torch.Tensor) -> torch.Tensor:
    p = logp.exp()
    return -torch.where(masks, p * logp, torch.zeros_like(p)).sum(dim=-1)


def grpo_update(policy: Policy, reference: Policy, opt, episodes: list[Episode], advantages: list[float],
                cfg: GRPOConfig) -> dict:
    """``updates_per_epoch`` gradient steps on one epoch's rollouts; returns loss statistics."""
    obs, masks_np, acts_np, old_np = batch_tensors(episodes)
    adv = torch.as_tensor(np.concatenate([[a] * len(e.actions) for e, a in zip(episodes, advantages)]),
                          dtype=torch.float32)
    acts, old = torch.as_tensor(acts_np), torch.as_tensor(old_np, dtype=torch.float32)
    masks = torch.as_tensor(masks_np)
    with torch.no_grad():
        ref_logp = reference.log_probs(obs, masks_np)
    policy.eval()  # no dropout: the sampling policy and the updated one must be the same function
    stats = {}
    for _ in range(cfg.updates_per_epoch):
        logits = policy(obs, masks_np)  # one forward pass: the sampling-temperature and T=1 views of it
        logp_t = torch.log_softmax(logits / cfg.explore_temperature, dim=-1)
        new = logp_t.gather(1, acts[:, None])[:, 0]
        ratio = torch.exp(new - old)
        surr = torch.minimum(ratio * adv, torch.clamp(ratio, 1 - cfg.clip_eps, 1 + cfg.clip_eps) * adv)
        logp1 = torch.log_softmax(logits, dim=-1)
        kl = masked_kl(logp1, ref_logp, masks)
        loss = -surr.mean() + cfg.kl_beta * kl.mean()
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(policy.parameters(), cfg.max_grad_norm)
        opt.step()
        stats = {"loss": float(loss.detach()), "kl": float(kl.detach().mean()),
                 "entropy": float(masked_entropy(logp1.detach(), masks).mean()),
                 "clip_fraction": float(((ratio - 1).abs() > cfg.clip_eps).float().mean())}
    return stats


def evaluate_policy(policy: Policy, env: PipelineEnv, kernels: Sequence[str], *, greedy: bool = True,
                    samples: int = 1, temperature: float = EXPLOIT_T, seed: int = 0) -> dict:
    """Mean improvement (%) of the greedy-decoded rollout (or best of ``samples``) per kernel."""
    gen = torch.Generator().manual_seed(seed)
    imps, pipelines = [], {}
    for k in kernels:
        best = None
        for _ in range(1 if greedy else samples):
            ep = rollout(policy, env, k, temperature=temperature, greedy=greedy, generator=gen)
            if best is None or ep.cycles < best.cycles:
                best = ep
        imps.append(best.improvement_pct)
        pipelines[k] = best.pipeline
    return {"mean_improvement_pct": statistics.fmean(imps) if imps else 0.0, "pipelines": pipelines}


class GRPOTrainer:
    """Owns the policy, its frozen reference, the optimiser, the env and the logs."""

    FIELDS = ["epoch", "mean_return", "mean_improvement_pct", "best_of_group_improvement_pct",
              "greedy_improvement_pct", "kl", "entropy", "clip_fraction", "loss", "evaluations", "cache_hits",
              "rollout_s", "update_s", "wall_s"]

    def __init__(self, policy: Policy, env: PipelineEnv, kernels: Sequence[str], cfg: GRPOConfig,
                 out_dir: str | Path, *, log: Callable[[str], None] | None = None, executor=None):
        self.policy, self.env, self.kernels, self.cfg = policy, env, list(kernels), cfg
        #: None: rollouts in this process; else a ptxopt.executor.Executor (rl.remote): one task per group
        self.executor = executor
        self._remote = [0, 0]  # evaluations and cache hits spent by the executor's workers
        self.reference = copy.deepcopy(policy).eval()
        for p in self.reference.parameters():
            p.requires_grad_(False)
        self.opt = torch.optim.Adam(policy.parameters(), lr=cfg.lr)
        self.out = Path(out_dir)
        self.out.mkdir(parents=True, exist_ok=True)
        self.csv_path = self.out / "grpo_log.csv"
        self.rows: list[dict] = []
        self.log = log or (lambda s: None)
        self.gen = torch.Generator().manual_seed(cfg.seed)
        self.rng = np.random.default_rng(cfg.seed)
        self._started, self._start_state = 0, None  # the epoch under way and the weights it started from

    def _counters(self) -> tuple[int, int]:
        ms = list(self.env._meters.values())
        return sum(m.evaluations for m in ms) + self._remote[0], sum(m.cache_hits for m in ms) + self._remote[1]

    def epoch(self, n: int) -> dict:
        cfg, t0 = self.cfg, time.perf_counter()
        ev0, hit0 = self._counters()
        batch = self.kernels
        if cfg.batch_kernels and cfg.batch_kernels < len(batch):
            batch = list(self.rng.choice(batch, cfg.batch_kernels, replace=False))
        groups = []
        self.policy.eval()
        if self.executor is not None:
            from ptxopt.evaluate.journal import cache_file

            from .remote import remote_groups

            groups, ev, hits = remote_groups(self.executor, self.policy, batch, cfg, self.env.options, n,
                                             cache_file(self.env.options.cache))
            self._remote[0] += ev
            self._remote[1] += hits
        for k in batch if self.executor is None else ():
            groups.append([rollout(self.policy, self.env, k, temperature=cfg.explore_temperature,
                                   generator=self.gen, episode=i, strategy="grpo") for i in range(cfg.group_size)])
        t1 = time.perf_counter()
        advs = group_advantages([[e.ret for e in g] for g in groups])
        episodes = [e for g in groups for e in g]
        stats = grpo_update(self.policy, self.reference, self.opt, episodes,
                            [a for ga in advs for a in ga], cfg)
        t2 = time.perf_counter()
        greedy_imp = None
        if cfg.eval_every and n % cfg.eval_every == 0:
            greedy_imp = evaluate_policy(self.policy, self.env, self.kernels)["mean_improvement_pct"]
        ev1, hit1 = self._counters()
        row = {"epoch": n, "mean_return": statistics.fmean(e.ret for e in episodes),
               "mean_improvement_pct": statistics.fmean(e.improvement_pct for e in episodes),
               "best_of_group_improvement_pct": statistics.fmean(max(e.improvement_pct for e in g) for g in groups),
               "greedy_improvement_pct": greedy_imp, **stats, "evaluations": ev1 - ev0, "cache_hits": hit1 - hit0,
               "rollout_s": t1 - t0, "update_s": t2 - t1, "wall_s": time.perf_counter() - t0}
        self.rows.append(row)
        return row

    def train(self, *, meta: dict | None = None) -> Path:
        """Run every epoch; policy.pt's path. On Ctrl-C: :class:`TrainingInterrupted`."""
        try:
            self._epochs(meta)
        except KeyboardInterrupt:
            with shielded():
                path = self._keep_finished(meta)
            raise TrainingInterrupted(len(self.rows), self.rows, path) from None
        plot_curves(self.rows, self.out / "grpo_curves.png")
        return self.save(self.out / "policy.pt", meta, self.cfg.epochs)

    def _keep_finished(self, meta: dict | None) -> Path | None:
        """Interrupted: curves of the finished epochs, and the last one's weights as policy.pt."""
        done = len(self.rows)
        if done < self._started and self._start_state is not None:  # roll back the epoch cut short
            self.policy.load_state_dict(self._start_state)
        plot_curves(self.rows, self.out / "grpo_curves.png")
        if done == 0:
            return None
        return self.save(self.out / "policy.pt", {**(meta or {}), "interrupted": True}, done)

    def _epochs(self, meta: dict | None) -> None:
        with open(self.csv_path, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=self.FIELDS, extrasaction="ignore")
            w.writeheader()
            for n in range(1, self.cfg.epochs + 1):
                self._start_state = None  # set again once the copy is whole
                self._started = n
                self._start_state = copy.deepcopy(self.policy.state_dict())  # what epoch n - 1 finished with
                row = self.epoch(n)
                w.writerow(row)
                f.flush()
                os.fsync(f.fileno())  # a finished epoch's row survives a crash or a power cut
                self.log(f"epoch {n}/{self.cfg.epochs}: return {row['mean_return']:+.4f}  "
                         f"sampled {row['mean_improvement_pct']:+.2f}%  greedy "
                         f"{'-' if row['greedy_improvement_pct'] is None else format(row['greedy_improvement_pct'], '+.2f')}%  "
                         f"KL {row['kl']:.4f}  H {row['entropy']:.3f}  evals {row['evaluations']}  "
                         f"{row['wall_s']:.1f}s")
                if self.cfg.checkpoint_every and n % self.cfg.checkpoint_every == 0:
                    self.save(self.out / f"grpo_epoch{n:03d}.pt", meta, n)

    def save(self, path: Path, meta: dict | None, epoch: int) -> Path:
        return save_policy(path, self.policy, meta={**(meta or {}), "stage": "grpo", "epoch": epoch,
                                                    "grpo": asdict(self.cfg), "kernels": self.kernels})


def plot_curves(rows: list[dict], path: str | Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if not rows:
        return
    ep = [r["epoch"] for r in rows]
    fig, axes = plt.subplots(2, 2, figsize=(9, 6))
    for ax, keys, title in [
        (axes[0, 0], ["mean_return"], "mean return"),
        (axes[0, 1], ["mean_improvement_pct", "best_of_group_improvement_pct", "greedy_improvement_pct"],
         "improvement over baseline (%, estimated cycles)"),
        (axes[1, 0], ["kl"], "KL to the BC policy"),
        (axes[1, 1], ["entropy"], "policy entropy"),
    ]:
        for k in keys:
            pts = [(e, r[k]) for e, r in zip(ep, rows) if r.get(k) is not None]
            if pts:
                ax.plot(*zip(*pts), marker=".", label=k.replace("_improvement_pct", "").replace("_", " "))
        ax.set_title(title, fontsize=9)
        ax.set_xlabel("epoch")
        if len(keys) > 1:
            ax.legend(fontsize=7)
    fig.tight_layout()
    from ptxopt.support.outputs import atomic_path

    with atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=110, format=Path(path).suffix[1:].lower() or None)
    plt.close(fig)
