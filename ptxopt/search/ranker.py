"""A learned action ranker: orders a state's legal actions and predicts whether any gains.

Guided search (:mod:`ptxopt.search.guided`) measures only the actions a
ranker orders first, plus ``explore`` random ones, and stops when it
predicts nothing gains (never at the root), so two questions are learned
(torch-free: scikit-learn's histogram gradient-boosted trees, whose missing
inputs -- old trajectories without context, see
:mod:`ptxopt.search.rank_features` -- are routed by the trees themselves,
or a table of each action's record):

* **order** (``model``), one of two models (:data:`ORDERS`), learned only
  at the states whose best gains more than :data:`NEAR_BEST` (states where
  nothing gains say nothing about which action to measure first), on a
  listwise target, the action's share of its state's best gain,
  ``max(0, gain) / best`` (1 for the best, 0 for every action that gains
  nothing):

  - ``prior`` (:class:`ActionPrior`): the action's own record, its mean
    share over the training states where it was legal, shrunk toward the
    mean over all actions by one pseudo-observation (an action legal at few
    gaining states sits near the mean instead of below the ones that were
    legal everywhere and never helped). It reads nothing of the state;
  - ``trees``: gradient-boosted trees on the whole row (state, context,
    action identity and what applying the action does), each state
    weighted equally. When fewer than two states gain, the gain model's
    order is used instead.

  Which one a ranker uses is chosen with its search settings on its own
  training groups (:func:`ptxopt.search.ranker_replay.tune`), the trees
  only when they beat the prior there by more than one standard error over
  the groups (:func:`ptxopt.search.ranker_replay.choose_setting`): with a
  few dozen gaining states in a handful of groups the trees fit the states
  they saw (the held-out report: ``benchmarks/studies/ranker_report.py``);
* **gain** (``gain_model``): the *option value* of measuring the action,
  ``max(0, log gain)`` (a slower child is never kept, so a loss costs one
  evaluation, not its size), for the stop decision: a state past the root
  is searched further only while its best predicted value exceeds the
  threshold, and it breaks ties in the order. (A signed gain would rank
  *safe* no-ops above the risky passes that win: a mean log gain punishes
  an action for the losses a search never keeps.)

A candidate that failed or could not be checked is worth nothing (0).
One row is ``static PTX features ++ step ++ context ++ one-hot action ++
action features ++ derived features``
(:data:`~ptxopt.search.rank_features.DERIVED_NAMES`).

``top_k``, ``explore`` and ``threshold`` travel with the ranker:
:func:`ptxopt.search.ranker_replay.train_tuned` chooses them by replaying
guided search on held-out folds of the training kernels' own groups (never
on data outside the training steps), against a random order at the same
budget in the same grid (``top_k`` 0: every measured action random), so a
ranker whose order does not beat random on its own folds falls back to it.

An action the ranker never saw (added after it was trained) still gets a
score: its row has an all-zero one-hot, so the action prior gives it the
mean share over the known actions, and the trees score it from what
applying it does (the child's action features, its register cap) and the
state, as an action they know nothing else about. It competes for the
``top_k`` on that score, and guided search keeps its exploration slots for
the unknown actions first, so none is masked forever
(:func:`ptxopt.search.guided.choose`).

File format: a pickle of a dict ``{"format": FORMAT, "version": VERSION,
"actions": [...], "feature_names": [...], "model": <sklearn estimator or ActionPrior>,
"gain_model": <sklearn estimator>, "top_k": int, "explore": int,
"threshold": float, "trained_on": {...}}``. A pickle runs code when
loaded: load only rankers you trust (the committed ones, or your own).
"""

from __future__ import annotations

import math
import pickle
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

from .rank_features import ACTION_FEATURE_NAMES, CONTEXT_NAMES, DERIVED_NAMES, action_features, action_vector, \
    context_vector, derived_features, state_context

FORMAT = "ptxopt-ranker"
VERSION = 4
#: The versions :func:`load` reads: 3 (trees order only) has the same layout; 4 may hold an :class:`ActionPrior`,
#: which a ptxopt reading only 3 could not unpickle (it says so by the version instead).
READS = (3, 4)
#: Actions measured per step in the ranker's order, when a ranker does not say.
TOP_K = 2
#: Random actions measured per step besides them (the exploration slots), when a ranker does not say.
EXPLORE = 1
#: The smallest predicted option value worth a measurement past the root (0.05%), when a ranker does not say.
THRESHOLD = 0.0005
#: A state whose best candidate gains less than this log gain (0.1%) has nothing to order (the order model
#: skips it; recall and the report count near-best actions within it).
NEAR_BEST = 0.001
#: The log gain recorded for a failing or unusable candidate (a wasted measurement); both models clip it to 0.
FAILED_GAIN = -0.05
#: Gains are clipped to this magnitude before training (a 10x slowdown says no more than a 40% one).
CLIP = 0.5
#: The order models :func:`train` fits (``order=``; the module doc).
ORDERS = ("prior", "trees")
#: Pseudo-observations of the action prior's shrinkage toward the mean share over all actions.
PRIOR_WEIGHT = 1.0
#: Where committed rankers live (``corpus/rankers/NAME.ranker``).
SUFFIX = ".ranker"


class RankerError(ValueError):
    """A ranker file that cannot be used (not a ranker, another version, unreadable)."""


def _static_names() -> tuple[str, ...]:
    from ptxopt.analysis.features import FEATURE_NAMES

    return tuple(FEATURE_NAMES)


def feature_names(actions: Sequence[str]) -> list[str]:
    return [*_static_names(), "step", *CONTEXT_NAMES, *(f"action:{a}" for a in actions), *ACTION_FEATURE_NAMES,
            *DERIVED_NAMES]


def _row(static: np.ndarray, step: float, ctx: np.ndarray, action: str, actions: Sequence[str],
         afeat: np.ndarray, arch: str = "sm_89") -> np.ndarray:
    onehot = np.array([1.0 if a == action else 0.0 for a in actions])
    derived = derived_features(action, dict(zip(_static_names(), static)), ctx, afeat, arch)
    return np.concatenate([static, [step], ctx, onehot, afeat, derived])


def _static_of(observation: Sequence[float]) -> tuple[np.ndarray, float]:
    """The static features and the step of an observation (any number of family slots between)."""
    n = len(_static_names())
    obs = np.asarray(observation, dtype=float)
    if len(obs) < n + 1:
        raise ValueError(f"observation of {len(obs)} values, expected at least {n + 1}")
    return obs[:n], float(obs[-1])


@dataclass
class Ranker:
    """Trained models (order and gain), the action vocabulary they know and guided search's settings."""

    model: object
    actions: tuple[str, ...]
    trained_on: dict = field(default_factory=dict)
    gain_model: object = None
    top_k: int = TOP_K
    threshold: float = THRESHOLD
    explore: int = EXPLORE

    def knows(self, action: str) -> bool:
        return action in self.actions

    def score_rows(self, rows: np.ndarray) -> np.ndarray:
        """The order scores of ``rows`` (higher: measure first)."""
        return np.asarray(self.model.predict(rows), dtype=float)

    def gain_rows(self, rows: np.ndarray) -> np.ndarray:
        """The predicted log gains of ``rows`` (the stop decision)."""
        return np.asarray((self.gain_model or self.model).predict(rows), dtype=float)

    def _rows(self, state, result, moves):
        legal = [m for m in moves if m.legal]
        if not legal:
            return [], None
        static, step = _static_of(state.observation())
        ctx = context_vector(state_context(state, result))
        arch = getattr(result, "arch", None) or "sm_89"
        return legal, np.stack([_row(static, step, ctx, m.action, self.actions,
                                     action_vector(action_features(state, m.child)), arch) for m in legal])

    def predict(self, state, result, moves) -> tuple[dict[str, float], dict[str, float]]:
        """``(order scores, predicted log gains)`` of every legal move's action; an action the ranker does not
        know (:meth:`knows`) is scored by its prior (an all-zero one-hot: the module doc)."""
        legal, rows = self._rows(state, result, moves)
        if not legal:
            return {}, {}
        names = [m.action for m in legal]
        return dict(zip(names, self.score_rows(rows))), dict(zip(names, self.gain_rows(rows)))

    def score(self, state, result, moves) -> dict[str, float]:
        """The order score of every legal move's action (unknown ones: their prior)."""
        return self.predict(state, result, moves)[0]

    def save(self, path: str | Path) -> None:
        doc = {"format": FORMAT, "version": VERSION, "actions": list(self.actions),
               "feature_names": feature_names(self.actions), "model": self.model, "gain_model": self.gain_model,
               "top_k": int(self.top_k), "explore": int(self.explore), "threshold": float(self.threshold),
               "trained_on": self.trained_on}
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
    if doc.get("version") not in READS:
        raise RankerError(f"{path}: ranker format version {doc.get('version')!r}, this ptxopt reads "
                          f"{', '.join(map(str, READS))}")
    actions = doc.get("actions")
    if not isinstance(actions, list) or not all(isinstance(a, str) for a in actions) \
            or doc.get("feature_names") != feature_names(actions) or not hasattr(doc.get("model"), "predict"):
        raise RankerError(f"{path}: ranker trained on other features than this ptxopt computes: retrain it")
    if not hasattr(doc.get("gain_model"), "predict") or not isinstance(doc.get("top_k"), int) \
            or not isinstance(doc.get("explore"), int) or not isinstance(doc.get("threshold"), float):
        raise RankerError(f"{path}: ranker file without its gain model or search settings: retrain it")
    return Ranker(doc["model"], tuple(actions), dict(doc.get("trained_on") or {}), gain_model=doc["gain_model"],
                  top_k=doc["top_k"], threshold=doc["threshold"], explore=doc["explore"])


def committed_ranker(name: str) -> Path | None:
    """The committed ranker called ``name`` (with or without ``.ranker``) under ``corpus/rankers``."""
    from ptxopt.kernels.corpus import corpus_file

    if not name or "/" in name:
        return None
    path = corpus_file("rankers", name if name.endswith(SUFFIX) else name + SUFFIX)
    return path if path.is_file() else None


def committed_rankers() -> list[str]:
    """Names of the committed rankers (for messages)."""
    from ptxopt.kernels.corpus import corpus_file

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

def _step_rows(s, actions: tuple, unknown: bool = False) -> list[tuple[str, np.ndarray, float]]:
    """The rows of one step, kept on the step per action vocabulary (evaluation protocols train many
    rankers on overlapping subsets of the same steps; the rows go when the step goes). ``unknown``: also
    the candidates outside the vocabulary (all-zero one-hot: their prior, for scoring)."""
    per = s.__dict__.setdefault("_ranker_rows", {})
    if (actions, unknown) not in per:
        out = []
        if s.candidates and s.cycles_before:
            static, step = _static_of(s.observation)
            ctx = context_vector(s.context)
            feats = s.action_features or {}
            for action, cyc in s.candidates.items():
                if action not in actions and not unknown:
                    continue
                gain = FAILED_GAIN if cyc is None or cyc <= 0 else math.log(s.cycles_before / cyc)
                out.append((action, _row(static, step, ctx, action, actions, action_vector(feats.get(action)),
                                         s.arch or "sm_89"), max(-CLIP, min(CLIP, gain))))
        per[(actions, unknown)] = out
    return per[(actions, unknown)]


def rows_of(steps: Iterable, actions: Sequence[str], *, unknown: bool = False
            ) -> tuple[np.ndarray, np.ndarray, list[tuple]]:
    """Training rows from trajectory steps: one per candidate measured at a state (``unknown``: also those
    outside ``actions``, scored by their prior). Returns ``(X, y, index)``: ``y`` the clipped log gain;
    ``index[i]`` is ``(kernel, step position, action)``."""
    X, y, idx = [], [], []
    actions = tuple(actions)
    for n, s in enumerate(steps):
        for action, row, gain in _step_rows(s, actions, unknown):
            X.append(row)
            y.append(gain)
            idx.append((s.kernel, n, action))
    if not X:
        return np.zeros((0, len(feature_names(actions)))), np.zeros(0), []
    return np.stack(X), np.asarray(y), idx


def relevance(y: np.ndarray, idx: Sequence[tuple]) -> np.ndarray:
    """Each row's share of its state's best gain, ``max(0, gain) / best``, at a state whose best gains more
    than :data:`NEAR_BEST`; NaN at the other states (nothing there tells one action from another)."""
    best: dict[int, float] = {}
    for (_, n, _), g in zip(idx, y):
        best[n] = max(best.get(n, -math.inf), g)
    return np.array([max(0.0, g) / best[n] if best[n] > NEAR_BEST else math.nan for (_, n, _), g in zip(idx, y)])


def _fit(X, y, seed, max_iter, weight=None):
    from sklearn.ensemble import HistGradientBoostingRegressor

    never = np.isnan(X).all(axis=0)
    if never.any():  # a column never known in these rows (old trajectories): constant, never split on
        X = X.copy()  # (the trees' binning fails on a column with no value at all)
        X[:, never] = 0.0

    model = HistGradientBoostingRegressor(max_iter=max_iter, learning_rate=0.08, max_leaf_nodes=15,
                                          min_samples_leaf=5, l2_regularization=1.0, random_state=seed)
    model.fit(X, y, sample_weight=weight)
    return model


def _order_model(X, y, idx, seed, max_iter):
    """The listwise order model (module doc), or None when fewer than two states gain."""
    rel = relevance(y, idx)
    keep = ~np.isnan(rel)
    states = [n for (_, n, _), k in zip(idx, keep) if k]
    if len(set(states)) < 2:
        return None
    count: dict[int, int] = {}
    for n in states:
        count[n] = count.get(n, 0) + 1
    weight = np.array([1.0 / count[n] for n in states]) * len(states) / len(count)  # each state alike, mean 1
    return _fit(X[keep], rel[keep], seed, max_iter, weight)


class ActionPrior:
    """The ``prior`` order model (module doc): each action's mean share of its state's best gain over the
    training states that gain where it was legal, shrunk toward ``mean`` (the mean share over every action
    there) by :data:`PRIOR_WEIGHT` pseudo-observations. It scores a row by its action's one-hot column; a row
    without one (an action it was not trained on) gets ``mean``. ``states[a]``: the gaining states where
    ``a`` was legal (its evidence)."""

    def __init__(self, columns: dict[str, int], share: dict[str, float], mean: float, states: dict[str, int]):
        self.columns, self.share, self.mean, self.states = columns, share, mean, states

    def predict(self, X) -> np.ndarray:
        X = np.asarray(X, dtype=float)
        out = np.full(len(X), self.mean)
        for a, col in self.columns.items():
            out[X[:, col] == 1.0] = self.share[a]
        return out


def _prior_model(y, idx, actions: Sequence[str]) -> ActionPrior | None:
    """The :class:`ActionPrior` of the rows ``(y, idx)``, or None when fewer than two states gain."""
    rel = relevance(y, idx)
    total: dict[str, float] = {}
    count: dict[str, int] = {}
    states = set()
    for (_, n, a), r in zip(idx, rel):
        if not math.isnan(r):
            total[a] = total.get(a, 0.0) + r
            count[a] = count.get(a, 0) + 1
            states.add(n)
    if len(states) < 2:
        return None
    mean = sum(total.values()) / sum(count.values())
    share = {a: (total.get(a, 0.0) + mean * PRIOR_WEIGHT) / (count.get(a, 0) + PRIOR_WEIGHT) for a in actions}
    names = feature_names(actions)
    return ActionPrior({a: names.index(f"action:{a}") for a in actions}, share, mean,
                       {a: count.get(a, 0) for a in actions})


def default_actions(steps: Sequence) -> list[str]:
    from .actions import PASS_ACTIONS

    seen = {a for s in steps for a in (s.candidates or {})}
    return [a for a in PASS_ACTIONS if a in seen] + sorted(seen - set(PASS_ACTIONS))


def train(steps: Sequence, *, actions: Sequence[str] | None = None, seed: int = 0, max_iter: int = 200,
          note: dict | None = None, top_k: int = TOP_K, threshold: float = THRESHOLD,
          explore: int = EXPLORE, order: str = "prior") -> Ranker:
    """A ranker fitted to every candidate of ``steps`` (trajectory :class:`Step` objects), with the ``order``
    model (:data:`ORDERS`) and guided search's ``top_k``, ``explore`` and ``threshold``
    (:func:`ptxopt.search.ranker_replay.train_tuned` chooses all four)."""
    return train_each(steps, (order,), actions=actions, seed=seed, max_iter=max_iter, note=note, top_k=top_k,
                      threshold=threshold, explore=explore)[order]


def train_each(steps: Sequence, orders: Sequence[str] = ORDERS, *, actions: Sequence[str] | None = None,
               seed: int = 0, max_iter: int = 200, note: dict | None = None, top_k: int = TOP_K,
               threshold: float = THRESHOLD, explore: int = EXPLORE) -> dict[str, Ranker]:
    """``order -> ranker`` (:func:`train`) for each of ``orders``, from one set of rows and one gain model
    (the part they share: :func:`ptxopt.search.ranker_replay.tune` compares the order models on its folds)."""
    bad = [o for o in orders if o not in ORDERS]
    if bad:
        raise ValueError(f"order {bad[0]!r}: one of {', '.join(ORDERS)}")
    steps = list(steps)
    if actions is None:
        actions = default_actions(steps)
    X, y, idx = rows_of(steps, actions)
    if len(y) == 0:
        raise ValueError("no measured candidates to train on")
    info = {"rows": int(len(y)), "kernels": len({k for k, _, _ in idx}),
            "gaining_states": int(len({n for (_, n, _), r in zip(idx, relevance(y, idx)) if not math.isnan(r)})),
            **(note or {})}
    gain_model = _fit(X, np.maximum(y, 0.0), seed, max_iter)
    out = {}
    for order in orders:
        if order == "prior":
            order_model = _prior_model(y, idx, actions)
            described = "prior: each action's mean share of the state's best gain where it was legal"
        else:
            order_model = _order_model(X, y, idx, seed, max_iter)
            described = "trees: listwise share of the state's best gain"
        own = dict(info, order=described if order_model is not None else
                   "the gain model's option value (fewer than two gaining states)",
                   order_model=order if order_model is not None else "gain")
        out[order] = Ranker(order_model if order_model is not None else gain_model, tuple(actions), own,
                            gain_model=gain_model, top_k=int(top_k), threshold=float(threshold),
                            explore=int(explore))
    return out
