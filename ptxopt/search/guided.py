"""Guided search: greedy search that measures only what a learned ranker ranks best.

At each state a ranker (:mod:`ptxopt.search.ranker`) orders every legal
action and predicts its gain from features that cost no measurement
(:mod:`ptxopt.search.rank_features`). At the root, and past it when some
action is predicted to gain more than ``threshold``, the ``top_k`` first in
the ranker's order are measured (ties in the order broken by the predicted
gain, then at random), and ``explore`` *exploration slots*: actions the
ranker does not know (added after it was trained; chosen at random among
those not picked on their prior score) first, then random ones of the rest.
Of the actions predicted to give ptxas the same input (an *outcome class*:
register directives asking for the same limit,
:func:`ptxopt.search.rank_features.outcome_class`) only the first in the
order is measured before every other action has had its turn: a measurement
of one tells the outcome of all. Likewise a pass's other variants
(``maxnreg_128`` after ``maxnreg_255``, ``unroll_4`` after ``unroll_2``:
:func:`ptxopt.search.rank_features.pass_kind`) follow the first variant of
every pass: they mostly agree with it, so the budget of a step goes to
passes not yet tried. The root is never given up on a
prediction: a ranker's stop rule learned on kernels that mostly have nothing
to gain would otherwise skip the few that do. The best measured child that
beats the current state is kept; the search stops when none does, when no action is predicted to gain and none
is unknown, or after ``max_steps``. ``top_k``, ``explore`` and
``threshold`` default to the ranker's own (chosen when it was trained, on
its training groups, against a random order at the same budget: ``top_k``
0 means its order did not beat random there and every slot is random).

So a step costs at most ``top_k + explore`` evaluations instead of greedy's one
per legal action, a ranker's mistake costs gain but never correctness or
speed (a child is kept only when measured better, and the reported pipeline
goes through the same never-slower and equivalence guards as every
strategy's), and an action the ranker never saw is still reachable.
"""

from __future__ import annotations

import math

from ptxopt.search.actions import STOP

from ptxopt.search.meter import BudgetExhausted, Meter
from .outcome import Outcome, start_steps
from .rank_features import outcome_class, pass_kind, state_context
from .random_search import kernel_rng
from .state import State
from .stepwise import Steps, drive
from .trajectory import make_step

from .ranker import EXPLORE, THRESHOLD, TOP_K  # noqa: F401  (the defaults, re-exported)


def outcome_classes(actions, context: dict | None) -> dict:
    """action -> outcome class (or None) at a state whose context (:func:`ptxopt.search.rank_features.state_context`,
    or a trajectory step's recorded one) is ``context``."""
    ctx = context or {}
    return {a: outcome_class(a, ctx) for a in actions}


def pass_kinds(actions) -> dict:
    """action -> the pass it appends without its parameters (:func:`ptxopt.search.rank_features.pass_kind`)."""
    return {a: pass_kind(a) for a in actions}


def demote_repeats(keys: dict, classes: dict | None, kinds: dict | None = None) -> dict:
    """``keys`` (action -> sort key, a tuple: larger first) with a leading tier, so that what repeats a
    measurement comes after what does not: 0 for each outcome class's members but its first (largest key;
    among equal keys the first by name -- the class predicts they give ptxas the same input), 1 for each
    pass's variants but its first (``kinds``: action -> pass; variants of one pass mostly agree, so a second
    one tells little: :func:`ptxopt.search.rank_features.pass_kind`), 2 for every other action. One rule
    for :func:`order` and for the recall that counts its hits (:func:`ptxopt.search.ranker_replay.recall`)."""
    classes, kinds = classes or {}, kinds or {}
    first_class: dict = {}
    first_kind: dict = {}
    tier = {}
    for a in sorted(keys, key=lambda a: (keys[a], [-ord(ch) for ch in a]), reverse=True):
        c, k = classes.get(a), kinds.get(a)
        if c is not None and first_class.setdefault(c, a) != a:
            tier[a] = 0
        elif k is not None and first_kind.setdefault(k, a) != a:
            tier[a] = 1
        else:
            tier[a] = 2
    return {a: (tier[a], *key) for a, key in keys.items()}


def order(moves, scores: dict, gains: dict | None, rng, classes: dict | None = None,
          kinds: dict | None = None) -> list:
    """The scored moves, best first: by order score, ties by predicted gain, remaining ties at random
    (never by the action list's order, which would always favour the same actions). ``classes``: action ->
    outcome class (:func:`ptxopt.search.rank_features.outcome_class`): of the actions predicted to give
    ptxas the same input only the first-ordered keeps its place, the others follow every other action;
    ``kinds``: action -> pass: a pass's other variants follow every pass's first (:func:`demote_repeats`)."""
    gains = scores if gains is None else gains
    scored = [m for m in moves if m.action in scores]
    keys = {m.action: (scores[m.action], gains.get(m.action, -math.inf)) for m in scored}
    if classes or kinds:
        keys = demote_repeats(keys, classes, kinds)
    noise = rng.random(len(scored)) if scored else []
    keyed = sorted(zip(scored, noise), key=lambda mn: ([-x for x in keys[mn[0].action]], mn[1]))
    return [m for m, _ in keyed]


def choose(moves, scores: dict, *, top_k: int, threshold: float, rng, gains: dict | None = None,
           known=None, explore: int = 1, at_root: bool = False, classes: dict | None = None,
           kinds: dict | None = None) -> list:
    """The moves to measure. When the state is the root (``at_root``: never stop there before measuring) or
    some predicted gain (``gains``; None: the scores are the gains) exceeds ``threshold``: the ``top_k``
    first by :func:`order`, then ``explore`` exploration slots: the actions the ranker does not know
    (``known``: the actions it was trained on; None: every scored one) not picked yet first, then random
    ones of the rest (in both, an action whose outcome class, ``classes``, and pass, ``kinds``, are not
    measured yet first, then one whose class is not: :func:`order`).
    Otherwise only one unknown action, if any (so none is masked forever). An unknown
    action may be scored (its prior) and picked on that score; unscored or not, it keeps its chance at a
    slot. ``top_k`` 0: every measured action is random (the fallback a tuner picks when the order does not
    beat random on its folds)."""
    gains = scores if gains is None else gains
    known = set(scores) if known is None else set(known)
    ranked = order(moves, scores, gains, rng, classes, kinds)
    go = at_root or any(gains.get(m.action, -math.inf) > threshold for m in ranked)
    pick = ranked[:top_k] if go else []
    taken = {m.action for m in pick}
    unseen = [m for m in moves if m.action not in known and m.action not in taken]
    rest = [m for m in moves if m.action in scores and m.action not in taken and m.action in known]
    slots = max(1, explore) if go else 1
    for _ in range(slots):
        pool = unseen if unseen else rest if go else []
        if not pool:
            break
        fresh = _fresh(pool, pick, classes or {}, kinds or {})
        pick.append(pool.pop(fresh[int(rng.integers(len(fresh)))]))
    return pick


def _fresh(pool, pick, classes: dict, kinds: dict):
    """Indices into ``pool`` of the moves an exploration slot draws from: an outcome class and a pass not
    measured in ``pick`` yet, else a class not measured, else any."""
    seen_class = {classes.get(p.action) for p in pick} - {None}
    seen_kind = {kinds.get(p.action) for p in pick} - {None}
    new_class = [i for i, m in enumerate(pool) if classes.get(m.action) not in seen_class]
    new_both = [i for i in new_class if kinds.get(pool[i].action) not in seen_kind]
    return new_both or new_class or range(len(pool))


def predictions(ranker, state, result, moves) -> tuple[dict, dict | None, set]:
    """``(order scores, predicted gains, known actions)`` from ``ranker`` (one that only scores: its scores
    are the gains; one without ``knows``: it knows what it scores)."""
    if hasattr(ranker, "predict"):
        scores, gains = ranker.predict(state, result, moves)
    else:
        scores, gains = ranker.score(state, result, moves), None
    knows = getattr(ranker, "knows", None)
    return scores, gains, ({m.action for m in moves if knows(m.action)} if knows else set(scores))


def settings(ranker, top_k: int | None, threshold: float | None) -> tuple[int, float]:
    """``top_k`` and ``threshold``: the caller's, else the ranker's own, else the defaults."""
    return (top_k if top_k is not None else getattr(ranker, "top_k", TOP_K),
            threshold if threshold is not None else getattr(ranker, "threshold", THRESHOLD))


def exploration(ranker, top_k: int | None) -> int:
    """The exploration slots: the ranker's own (``top_k`` 0: all random) unless the caller set ``top_k``
    (then one, as the ``top_k + 1`` budget says)."""
    return getattr(ranker, "explore", EXPLORE) if top_k is None else 1


def guided(root: State, meter: Meter, *, ranker, max_steps: int = 6, top_k: int | None = None,
           threshold: float | None = None, seed: int = 0, episode: int = 0, strategy: str = "guided", **_) -> Outcome:
    return drive(guided_steps(root, meter, ranker=ranker, max_steps=max_steps, top_k=top_k, threshold=threshold,
                              seed=seed, episode=episode, strategy=strategy), meter)


def guided_steps(root: State, meter: Meter, *, ranker, max_steps: int = 6, top_k: int | None = None,
                 threshold: float | None = None, seed: int = 0, episode: int = 0, strategy: str = "guided",
                 **_) -> Steps:
    """:func:`guided` as a stepwise strategy (:mod:`ptxopt.search.stepwise`)."""
    out = yield from start_steps(root, meter)
    if not out.baseline.ok:
        return out
    rng = kernel_rng(seed, root.kernel.label)
    explore = exploration(ranker, top_k)
    top_k, threshold = settings(ranker, top_k, threshold)
    state, result = root, out.baseline
    for i in range(max_steps):
        moves = state.legal_moves()
        scores, gains, known = predictions(ranker, state, result, moves)
        classes = outcome_classes([m.action for m in moves], state_context(state, result))
        pick = choose(moves, scores, top_k=top_k, threshold=threshold, rng=rng, gains=gains, known=known,
                      explore=explore, at_root=i == 0, classes=classes, kinds=pass_kinds(m.action for m in moves))
        results = []
        if pick:
            try:
                results = yield [m.child for m in pick]
            except BudgetExhausted:
                out.note, pick, results = "budget exhausted", [], []
        candidates = {m.action: (r.cycles if meter.usable(r) else None) for m, r in zip(pick, results)}
        best_i = None
        for j, r in enumerate(results):
            if meter.better(r, result) and (best_i is None or meter.better(r, results[best_i])):
                best_i = j
        kw = dict(kernel=root.kernel.label, strategy=strategy, episode=episode, index=i, candidates=candidates,
                  options=meter.options, result=result, measured=list(zip(pick, results)))
        if best_i is None:
            out.steps.append(make_step(state, STOP, result.cycles, result.cycles, **kw))
            break
        out.steps.append(make_step(state, pick[best_i].action, result.cycles, results[best_i].cycles, **kw))
        state, result = pick[best_i].child, results[best_i]
    out.best, out.best_result = state, result
    return out
