"""Checkpoints: weights, config and the action/observation names they mean.

A checkpoint is a plain dict of tensors, numbers, strings and lists, so it
loads with ``torch.load(..., weights_only=True)`` (no pickled code runs).
It records the action strings (:data:`ptxopt.search.actions.ACTIONS`) and
observation names it was trained with. Loading it against another action
list or feature layout either **widens** it or refuses it with
:class:`CheckpointError`, never silently misreading the outputs:

* widened (:func:`widen`) when every action and every observation slot it
  was trained with still exists, by name and in the same order (actions are appended to
  :data:`~ptxopt.search.actions.ACTIONS`; a new pass family adds an
  ``active:`` slot): the result is a policy of the current shape that
  computes exactly the old logits for the old actions -- the first layer's
  columns for new observation slots are zero, so they change nothing -- and
  gives every new action a logit of :data:`~rl.policy.NEG_INF` (weight 0),
  so it is never chosen. The committed policy keeps working after the
  action list grows; learning the new actions belongs to retraining.
* refused otherwise (an action or slot renamed, removed or moved).
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

    from ptxopt.support.outputs import write_atomic

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
    old_actions, old_obs = list(doc["action_names"]), list(doc["observation_names"])
    if not _subsequence(old_actions, list(ACTIONS)):
        raise CheckpointError(f"{path}: trained for actions {doc['action_names']}, but this ptxopt has "
                              f"{list(ACTIONS)} (not the same actions with some added); retrain the policy")
    if not _subsequence(old_obs, observation_names()):
        raise CheckpointError(f"{path}: trained on a different observation layout "
                              f"({len(doc['observation_names'])} slots, this ptxopt has "
                              f"{len(observation_names())}, not the same slots with some added); retrain the policy")
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
        if (cfg.obs_dim, cfg.n_actions) != (len(old_obs), len(old_actions)):
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
    if (old_actions, old_obs) != (list(ACTIONS), observation_names()):
        policy = widen(policy, old_actions, old_obs)
    return policy


@torch.no_grad()
def widen(old: Policy, old_actions: list[str], old_obs: list[str]) -> Policy:
    """``old`` (trained on ``old_actions``/``old_obs``, each a subset of the
    current names) as a policy over the current actions and observation slots
    (see the module doc): the same logits for the old actions on the same
    observation, :data:`~rl.policy.NEG_INF` for the new ones."""
    from dataclasses import replace

    from .policy import NEG_INF

    names = observation_names()
    obs_at = torch.tensor([names.index(n) for n in old_obs])
    act_at = torch.tensor([ACTIONS.index(a) for a in old_actions])
    new = Policy(replace(old.config, obs_dim=len(names), n_actions=len(ACTIONS)))
    sd_old, sd = old.state_dict(), new.state_dict()
    first = "body.0" if old.config.layers > 0 else "head"
    for k, v in sd_old.items():
        cols = obs_at if k == f"{first}.weight" else None  # the layer that reads the observation
        if k.startswith("head."):
            sd[k] = _rows(sd[k], v, act_at, NEG_INF if k == "head.bias" else 0.0, cols)
        elif cols is not None:
            sd[k] = torch.zeros_like(sd[k])
            sd[k][:, cols] = v
        else:
            sd[k] = v.clone()
    new.load_state_dict(sd)
    new.train(old.training)
    return new


def _subsequence(old: list[str], new: list[str]) -> bool:
    """``old`` is ``new`` with some names left out, in the same order (no name twice)."""
    it = iter(new)
    return len(set(old)) == len(old) and all(n in it for n in old)


def _rows(like: torch.Tensor, v: torch.Tensor, rows: torch.Tensor, fill: float, cols=None) -> torch.Tensor:
    """A tensor shaped ``like``, ``fill`` everywhere except ``rows`` (and ``cols``), which hold ``v``."""
    out = torch.full_like(like, fill)
    if cols is None:
        out[rows] = v
    else:
        out[rows[:, None], cols[None, :]] = v
    return out
