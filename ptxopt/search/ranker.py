"""A learned action ranker: predicts each legal action's gain at a state.

Guided search (:mod:`ptxopt.search.guided`) measures only the actions a
ranker scores best, so what matters is the *order* it puts the actions in,
not the policy it would follow on its own. The model is scikit-learn's
histogram gradient-boosted trees (torch-free; missing inputs -- old
trajectories without context, see :mod:`ptxopt.search.rank_features` --
are routed by the trees themselves), regressing the log gain
``log(cycles_before / cycles_after)`` of every candidate measured at every
recorded state; a candidate that failed or could not be checked counts as
:data:`FAILED_GAIN` (measuring it is wasted).

One row is ``static PTX features ++ step ++ context ++ one-hot action ++
action features``. An action the ranker never saw (added after it was
trained) has an all-zero one-hot and no score: guided search gives it the
exploration slot, so it is never masked forever.

File format: a pickle of a dict ``{"format": FORMAT, "version": VERSION,
"actions": [...], "feature_names": [...], "model": <sklearn estimator>,
"trained_on": {...}}``. A pickle runs code when loaded: load only rankers
you trust (the committed ones, or your own).
"""

from __future__ import annotations

import math
import pickle
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

from .rank_features import ACTION_FEATURE_NAMES, CONTEXT_NAMES, action_features, action_vector, context_vector, \
    state_context

FORMAT = "ptxopt-ranker"
VERSION = 1
#: The gain a failing or unusable candidate is trained towards (a wasted measurement).
FAILED_GAIN = -0.05
#: Gains are clipped to this magnitude before training (a 10x slowdown says no more than a 40% one).
CLIP = 0.5
#: Where committed rankers live (``corpus/rankers/NAME.ranker``).
SUFFIX = ".ranker"


class RankerError(ValueError):
    """A ranker file that cannot be used (not a ranker, another version, unreadable)."""


def _static_names() -> tuple[str, ...]:
    from ptxopt.analysis.features import FEATURE_NAMES

    return tuple(FEATURE_NAMES)


def feature_names(actions: Sequence[str]) -> list[str]:
    return [*_static_names(), "step", *CONTEXT_NAMES, *(f"action:{a}" for a in actions), *ACTION_FEATURE_NAMES]


def _row(static: np.ndarray, step: float, ctx: np.ndarray, action: str, actions: Sequence[str],
         afeat: np.ndarray) -> np.ndarray:
    onehot = np.array([1.0 if a == action else 0.0 for a in actions])
    return np.concatenate([static, [step], ctx, onehot, afeat])


def _static_of(observation: Sequence[float]) -> tuple[np.ndarray, float]:
    """The static features and the step of an observation (any number of family slots between)."""
    n = len(_static_names())
    obs = np.asarray(observation, dtype=float)
    if len(obs) < n + 1:
        raise ValueError(f"observation of {len(obs)} values, expected at least {n + 1}")
    return obs[:n], float(obs[-1])


@dataclass
class Ranker:
    """A trained model and the action vocabulary it was trained on."""

    model: object
    actions: tuple[str, ...]
    trained_on: dict = field(default_factory=dict)

    def knows(self, action: str) -> bool:
        return action in self.actions

    def score_rows(self, rows: np.ndarray) -> np.ndarray:
        return np.asarray(self.model.predict(rows), dtype=float)

    def score(self, state, result, moves) -> dict[str, float]:
        """Predicted log gain of each legal move's action that the ranker knows (others: absent)."""
        known = [m for m in moves if m.legal and self.knows(m.action)]
        if not known:
            return {}
        static, step = _static_of(state.observation())
        ctx = context_vector(state_context(state, result))
        rows = np.stack([_row(static, step, ctx, m.action, self.actions,
                              action_vector(action_features(state, m.child))) for m in known])
        return dict(zip((m.action for m in known), self.score_rows(rows)))

    def save(self, path: str | Path) -> None:
        doc = {"format": FORMAT, "version": VERSION, "actions": list(self.actions),
               "feature_names": feature_names(self.actions), "model": self.model, "trained_on": self.trained_on}
        with open(path, "wb") as f:
            pickle.dump(doc, f, protocol=4)


def load(path: str | Path) -> Ranker:
    """A ranker from ``path``; :class:`RankerError` saying why when it is not one."""
    try:
        with open(path, "rb") as f:
            doc = pickle.load(f)
    except FileNotFoundError:
        raise RankerError(f"{path}: no such ranker file") from None
    except Exception as e:  # a truncated, foreign or corrupt file
        raise RankerError(f"{path}: not a ranker file ({type(e).__name__}: {e})".splitlines()[0]) from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise RankerError(f"{path}: not a ranker file (no '{FORMAT}' header)")
    if doc.get("version") != VERSION:
        raise RankerError(f"{path}: ranker format version {doc.get('version')!r}, this ptxopt reads {VERSION}")
    actions = doc.get("actions")
    if not isinstance(actions, list) or not all(isinstance(a, str) for a in actions) \
            or doc.get("feature_names") != feature_names(actions) or not hasattr(doc.get("model"), "predict"):
        raise RankerError(f"{path}: ranker trained on other features than this ptxopt computes: retrain it")
    return Ranker(doc["model"], tuple(actions), dict(doc.get("trained_on") or {}))


def committed_ranker(name: str) -> Path | None:
    """The committed ranker called ``name`` (with or without ``.ranker``) under ``corpus/rankers``."""
    from ptxopt.corpus import corpus_file

    if not name or "/" in name:
        return None
    path = corpus_file("rankers", name if name.endswith(SUFFIX) else name + SUFFIX)
    return path if path.is_file() else None


def committed_rankers() -> list[str]:
    """Names of the committed rankers (for messages)."""
    from ptxopt.corpus import corpus_file

    return sorted(p.stem for p in corpus_file("rankers").glob("*" + SUFFIX))


def resolve(name_or_path: str) -> Ranker:
    """Load a ranker by path, else by committed name."""
    p = Path(name_or_path)
    if not p.is_file():
        found = committed_ranker(name_or_path)
        if found is not None:
            p = found
    return load(p)


# -- training ----------------------------------------------------------------------------------------------

def rows_of(steps: Iterable, actions: Sequence[str]) -> tuple[np.ndarray, np.ndarray, list[tuple]]:
    """Training rows from trajectory steps: one per candidate measured at a state.
    Returns ``(X, y, index)``; ``index[i]`` is ``(kernel, step position, action)`` of row i."""
    X, y, idx = [], [], []
    for n, s in enumerate(steps):
        if not s.candidates or not s.cycles_before:
            continue
        static, step = _static_of(s.observation)
        ctx = context_vector(s.context)
        feats = s.action_features or {}
        for action, cyc in s.candidates.items():
            if action not in actions:
                continue
            gain = FAILED_GAIN if cyc is None or cyc <= 0 else math.log(s.cycles_before / cyc)
            X.append(_row(static, step, ctx, action, actions, action_vector(feats.get(action))))
            y.append(max(-CLIP, min(CLIP, gain)))
            idx.append((s.kernel, n, action))
    if not X:
        return np.zeros((0, len(feature_names(actions)))), np.zeros(0), []
    return np.stack(X), np.asarray(y), idx


def train(steps: Sequence, *, actions: Sequence[str] | None = None, seed: int = 0, max_iter: int = 200,
          note: dict | None = None) -> Ranker:
    """A ranker fitted to every candidate of ``steps`` (trajectory :class:`Step` objects)."""
    from sklearn.ensemble import HistGradientBoostingRegressor

    steps = list(steps)
    if actions is None:
        seen = {a for s in steps for a in (s.candidates or {})}
        from .actions import PASS_ACTIONS

        actions = [a for a in PASS_ACTIONS if a in seen] + sorted(seen - set(PASS_ACTIONS))
    X, y, idx = rows_of(steps, actions)
    if len(y) == 0:
        raise ValueError("no measured candidates to train on")
    model = HistGradientBoostingRegressor(max_iter=max_iter, learning_rate=0.08, max_leaf_nodes=15,
                                          min_samples_leaf=5, l2_regularization=1.0, random_state=seed)
    X = X.copy()
    X[:, np.isnan(X).all(axis=0)] = 0.0  # a column never known (old trajectories): constant, never split on
    model.fit(X, y)
    info = {"rows": int(len(y)), "kernels": len({k for k, _, _ in idx}), **(note or {})}
    return Ranker(model, tuple(actions), info)


class RandomRanker:
    """The baseline a learned ranker must beat: every known action scored at random."""

    def __init__(self, actions: Sequence[str], seed: int = 0):
        self.actions = tuple(actions)
        self.rng = np.random.default_rng(seed)

    def knows(self, action: str) -> bool:
        return action in self.actions

    def score_rows(self, rows: np.ndarray) -> np.ndarray:
        return self.rng.random(len(rows))

    def score(self, state, result, moves) -> dict[str, float]:
        known = [m.action for m in moves if m.legal and self.knows(m.action)]
        return dict(zip(known, self.rng.random(len(known))))
