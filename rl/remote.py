"""GRPO rollouts through an executor (``ptxopt train --executor ray[:ADDRESS]`` / ``-j N``).

Why: an epoch's groups (G rollouts of one kernel) are independent given the
epoch's weights, and rolling out is where an epoch spends its time (each
step evaluates a candidate). So each kernel's group is one task
(:mod:`ptxopt.executor`): the task gets the weights, the kernel and a seed,
rolls the G episodes out in a fresh environment against a private cache
seeded with the driver's rows for that kernel, and returns the episodes'
training data (observations, masks, actions, log-probabilities, rewards,
cycles) with the cache rows, which the driver writes
(:mod:`ptxopt.evaluate.journal`). The update stays in the driver.

Seeds: a group's generator is seeded from (run seed, epoch, kernel index),
so a run through an executor is reproducible whatever the worker count and
placement; it does not replay the in-process run, whose one generator is
shared by every group in turn.
"""

from __future__ import annotations

import hashlib
from dataclasses import replace

import torch

from .policy import Policy, PolicyConfig
from .rollout import Episode, rollout


def group_seed(seed: int, epoch: int, index: int) -> int:
    return int.from_bytes(hashlib.sha256(f"{seed}/{epoch}/{index}".encode()).digest()[:8], "little") >> 1


def group_task(args):
    """In a worker: G rollouts of one kernel; ``(episodes, evaluations, cache_hits, rows)``."""
    from ptxopt.evaluate.journal import Rows, new_rows, private_cache

    from .env import PipelineEnv

    state, pconfig, kernel, group, temperature, seed, options, max_steps, seed_rows = args
    policy = Policy(PolicyConfig(**pconfig))
    policy.load_state_dict(state)
    policy.eval()

    def run(opts):
        env = PipelineEnv([kernel], options=opts, max_steps=max_steps)
        gen = torch.Generator().manual_seed(seed)
        eps = [_slim(rollout(policy, env, kernel, temperature=temperature, generator=gen, episode=i,
                             strategy="grpo")) for i in range(group)]
        ms = list(env._meters.values())
        return eps, sum(m.evaluations for m in ms), sum(m.cache_hits for m in ms)

    if options.cache is None:
        return (*run(options), Rows())
    with private_cache(seed_rows) as path:
        out = run(replace(options, cache=str(path)))
        return (*out, new_rows(path, seed_rows))


def _slim(e: Episode) -> Episode:
    """What the update and the epoch's statistics need (no search states: large, and rebuilt on demand)."""
    return replace(e, state=None, steps=[])


def remote_groups(executor, policy: Policy, kernels, cfg, options, epoch: int, cache_path):
    """The epoch's groups, rolled out through ``executor``; ``(groups, evaluations, cache_hits)``.
    A group whose task failed (or whose worker died twice) raises: an epoch is not trained on part of its kernels."""
    from ptxopt.evaluate.journal import merge_rows, seed_rows

    state = {k: v.detach().cpu() for k, v in policy.state_dict().items()}
    args = [(state, policy.config.to_json(), k, cfg.group_size, cfg.explore_temperature,
             group_seed(cfg.seed, epoch, i), options, cfg.max_steps, seed_rows(cache_path, k))
            for i, k in enumerate(kernels)]
    ev = hits = 0

    def written(o) -> None:
        if o.ok:
            merge_rows(cache_path, o.value[3])

    from ptxopt.evaluate import BackendUnavailable, CacheError

    outcomes = executor.run(group_task, args, fatal=(CacheError, BackendUnavailable), on_outcome=written)
    groups = []
    for k, o in zip(kernels, outcomes):
        if not o.ok:
            raise RuntimeError(f"GRPO rollouts of {k} failed: {o.error or o.died}")
        eps, e, h, _ = o.value
        groups.append(eps)
        ev, hits = ev + e, hits + h
    return groups, ev, hits


__all__ = ["group_task", "remote_groups", "group_seed"]
