"""Checkpoints: weights, config and the action/observation names they mean.

A checkpoint is a plain dict of tensors, numbers, strings and lists, so it
loads with ``torch.load(..., weights_only=True)`` (no pickled code runs).
It records the action strings (:data:`ptxopt.search.actions.ACTIONS`) and
observation names it was trained with;
loading it against a different action list or feature layout is refused
with :class:`CheckpointError` rather than silently misreading the outputs.
"""

from __future__ import annotations

from pathlib import Path

import torch

from ptxopt.search import ACTIONS, observation_names

from .policy import Policy, PolicyConfig

FORMAT = "ptxopt-policy/1"


class CheckpointError(Exception):
    """A checkpoint that cannot be used (missing, corrupt, or for other actions/features)."""


def save_policy(path: str | Path, policy: Policy, *, meta: dict | None = None) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    doc = {
        "format": FORMAT,
        "state_dict": policy.state_dict(),
        "config": policy.config.to_json(),
        "action_names": list(ACTIONS),
        "observation_names": observation_names(),
        "meta": dict(meta or {}),
    }
    tmp = path.with_suffix(path.suffix + ".tmp")
    torch.save(doc, tmp)
    tmp.replace(path)  # never a half-written checkpoint
    return path


_cache: dict[tuple[str, float], tuple[Policy, dict]] = {}


def load_trainable(path: str | Path) -> tuple[Policy, dict]:
    """Like :func:`load_policy`, but a private copy to train (the loaded
    policy is shared by every caller of :func:`load_policy`)."""
    import copy

    policy, meta = load_policy(path)
    return copy.deepcopy(policy), meta


def load_policy(path: str | Path) -> tuple[Policy, dict]:
    """``(policy in eval mode, metadata)``; raises :class:`CheckpointError`."""
    path = Path(path)
    try:
        key = (str(path.resolve()), path.stat().st_mtime)
    except OSError as e:
        raise CheckpointError(f"{path}: cannot read checkpoint: {e.strerror}") from None
    if key in _cache:
        return _cache[key]
    try:
        doc = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:
        raise CheckpointError(f"{path}: not a ptxopt policy checkpoint ({type(e).__name__}: {e})"[:400]) from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise CheckpointError(f"{path}: not a ptxopt policy checkpoint (format {doc.get('format') if isinstance(doc, dict) else None!r}, expected {FORMAT})")
    missing = [k for k in ("state_dict", "config", "action_names", "observation_names") if k not in doc]
    if missing:
        raise CheckpointError(f"{path}: damaged policy checkpoint: no {', '.join(missing)}")
    if list(doc["action_names"]) != list(ACTIONS):
        raise CheckpointError(f"{path}: trained for actions {doc['action_names']}, but this ptxopt has "
                              f"{list(ACTIONS)}; retrain the policy")
    if list(doc["observation_names"]) != observation_names():
        raise CheckpointError(f"{path}: trained on a different observation layout "
                              f"({len(doc['observation_names'])} slots, this ptxopt has "
                              f"{len(observation_names())}); retrain the policy")
    try:
        policy = Policy(PolicyConfig(**doc["config"]))
        policy.load_state_dict(doc["state_dict"])
    except (TypeError, RuntimeError, ValueError) as e:
        raise CheckpointError(f"{path}: damaged policy checkpoint: the weights do not fit its config "
                              f"({str(e).splitlines()[0][:200]})") from None
    policy.eval()
    _cache[key] = (policy, doc.get("meta", {}))
    return _cache[key]
