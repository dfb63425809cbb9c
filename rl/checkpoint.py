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
    import io

    from ptxopt.outputs import write_atomic

    buf = io.BytesIO()  # serialised first: torch reports a full disk as a RuntimeError, not an OSError
    torch.save(doc, buf)
    write_atomic(path, buf.getvalue())  # never a half-written checkpoint; a full disk keeps the previous one
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
    policy = _policy_from(doc, path)
    policy.eval()
    _cache[key] = (policy, doc.get("meta") or {})
    return _cache[key]


def _policy_from(doc, path: Path) -> Policy:
    """The policy ``doc`` describes, after checking every field's type and
    every weight's finiteness: a damaged or hand-edited checkpoint is a
    :class:`CheckpointError` here, not a TypeError, nor a NaN policy whose
    every logit loses to the mask and that fails much later as "action
    masked" (or scores 0 % in ``train --eval``)."""
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise CheckpointError(f"{path}: not a ptxopt policy checkpoint (format "
                              f"{doc.get('format') if isinstance(doc, dict) else None!r}, expected {FORMAT})")
    missing = [k for k in ("state_dict", "config", "action_names", "observation_names") if k not in doc]
    if missing:
        raise CheckpointError(f"{path}: damaged policy checkpoint: no {', '.join(missing)}")
    for k in ("action_names", "observation_names"):
        if not isinstance(doc[k], (list, tuple)) or not all(isinstance(n, str) for n in doc[k]):
            raise CheckpointError(f"{path}: damaged policy checkpoint: {k} is not a list of names "
                                  f"({type(doc[k]).__name__})")
    if list(doc["action_names"]) != list(ACTIONS):
        raise CheckpointError(f"{path}: trained for actions {doc['action_names']}, but this ptxopt has "
                              f"{list(ACTIONS)}; retrain the policy")
    if list(doc["observation_names"]) != observation_names():
        raise CheckpointError(f"{path}: trained on a different observation layout "
                              f"({len(doc['observation_names'])} slots, this ptxopt has "
                              f"{len(observation_names())}); retrain the policy")
    config, weights, meta = doc["config"], doc["state_dict"], doc.get("meta")
    if not isinstance(config, dict) or not isinstance(weights, dict) or not isinstance(meta, (dict, type(None))):
        raise CheckpointError(f"{path}: damaged policy checkpoint: config, state_dict and meta must be mappings")
    for name, t in weights.items():
        if not isinstance(t, torch.Tensor):
            raise CheckpointError(f"{path}: damaged policy checkpoint: weight {name} is a "
                                  f"{type(t).__name__}, not a tensor")
        if t.is_floating_point() and not bool(torch.isfinite(t).all()):
            raise CheckpointError(f"{path}: damaged policy checkpoint: weight {name} is not finite (NaN or inf)")
    try:
        cfg = PolicyConfig(**config)
        if (cfg.obs_dim, cfg.n_actions) != (len(observation_names()), len(ACTIONS)):
            raise ValueError(f"{cfg.obs_dim} inputs and {cfg.n_actions} outputs")
        with torch.device("meta"):  # the config's shapes, checked before any memory is spent on them
            shapes = {k: tuple(v.shape) for k, v in Policy(cfg).state_dict().items()}
        if shapes != {k: tuple(v.shape) for k, v in weights.items()}:
            raise ValueError("weight names or shapes differ")
        policy = Policy(cfg)
        policy.load_state_dict(weights)
    except (TypeError, RuntimeError, ValueError) as e:
        raise CheckpointError(f"{path}: damaged policy checkpoint: the weights do not fit its config "
                              f"({str(e).splitlines()[0][:200]})") from None
    return policy
