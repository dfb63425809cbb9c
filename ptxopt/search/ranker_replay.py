"""Guided search replayed on recorded greedy trajectories: evaluation and tuning of a ranker without ptxas.

A greedy trajectory holds, at every state on greedy's path, the cycles of
every legal candidate. Guided search (:mod:`ptxopt.search.guided`) is
replayed on it: at each state it picks, by :func:`ptxopt.search.guided.choose`'s
rules, among the candidates greedy measured there, and keeps the best
improving one. While that is greedy's action it follows greedy's path; when
it keeps another improving action the replay ends there with that
candidate's cycles (the states after it were never measured), so a replayed
gain is a LOWER BOUND on what live guided search finds. (When greedy's
action is measured and ties the best measured cycles exactly, the replay
follows greedy's path.) Evaluations are
counted as ``search`` counts them: the baseline plus each measured candidate.

:func:`tune` chooses a ranker's order model (:data:`ptxopt.search.ranker.ORDERS`),
``top_k``, ``explore`` and ``threshold`` this way on its own training groups
(group-wise folds, one per group: a fold's ranker never saw the fold's group), so no
held-out data decides them. Its grid holds a random order at every budget (``top_k`` 0: every measured action
random, averaged over :data:`RANDOM_SEEDS` draws), so the ranker's order is
kept only where it beats random on the folds; and when the folds hold no
kernel that gains, nothing is learned about stopping: the defaults stay.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from ptxopt.search.actions import STOP

from .random_search import kernel_rng
from .ranker import Ranker

#: A hit of top-k recall: an action within this fraction of the best candidate's cycles.
HIT_TOL = 0.001
#: The grid :func:`tune` searches: actions in the ranker's order (0: none, a random order), random
#: exploration slots, and stop thresholds on the predicted option value (applied past the root only).
TOP_KS = (0, 1, 2, 3, 4, 6)
EXPLORES = (1, 2, 4)
THRESHOLDS = (-math.inf, 0.0005, 0.002, 0.005)
#: Group-wise folds :func:`tune` replays on; None: one per training group (leave-one-group-out, the way the
#: report judges a ranker). With three folds of about four groups each, a fold's winner was decided by the one or
#: two groups in it that gain, and the tuner chose the trees for groups where held out they lost to the prior.
FOLDS: int | None = None
#: Draws averaged per replay where the choice is random (``top_k`` 0 or exploration slots).
RANDOM_SEEDS = 3
#: :func:`tune` keeps the replayed evaluations at most this fraction of greedy's (below the 35% target:
#: live search spends a little more than a replay, which ends where it leaves greedy's path).
EVAL_CAP = 0.30


class _Move:
    def __init__(self, action):
        self.action = action


def greedy_episodes(steps) -> list[list]:
    """The complete greedy episodes of ``steps`` (each starting at step 0), in first-seen order."""
    from .trajectory import episodes

    return [e for e in episodes(s for s in steps if s.strategy == "greedy") if e and e[0].step == 0]


def score_steps(ranker, steps) -> dict[int, tuple[dict, dict]]:
    """``id(step) -> (order scores, predicted gains)`` for every step, in one prediction per model."""
    from .ranker import rows_of

    X, _, idx = rows_of(steps, ranker.actions, unknown=isinstance(ranker, Ranker))
    out: dict[int, tuple[dict, dict]] = {id(s): ({}, {}) for s in steps}
    if idx:
        X = X.copy()
        order, gains = ranker.score_rows(X), ranker.gain_rows(X)
        for (_, n, a), o, g in zip(idx, order, gains):
            sc, gn = out[id(steps[n])]
            sc[a], gn[a] = float(o), float(g)
    return out


def _kept(step, name: str, deps: tuple, compute):
    """``compute()``, kept on ``step`` under ``name`` for as long as ``deps`` are the same objects (a tuner
    replays every step once per setting and draw)."""
    kept = step.__dict__.get(name)
    if kept is None or any(a is not b for a, b in zip(kept[0], deps)):
        kept = step.__dict__[name] = (deps, compute())
    return kept[1]


def classes_of(step) -> dict:
    """The outcome classes of a recorded step's candidates (:func:`ptxopt.search.guided.outcome_classes`),
    kept on the step for its context and candidates."""
    from .guided import outcome_classes

    return _kept(step, "_outcome_classes", (step.context, step.candidates),
                 lambda: outcome_classes(step.candidates, step.context))


def kinds_of(step) -> dict:
    """The pass of each of a recorded step's candidates (:func:`ptxopt.search.guided.pass_kinds`), kept on
    the step for its candidates."""
    from .guided import pass_kinds

    return _kept(step, "_pass_kinds", (step.candidates,), lambda: pass_kinds(step.candidates))


def replay(scored: dict, episode, *, top_k: int, threshold: float, seed: int = 0, known=None,
           explore: int = 1, classes: bool = True, kinds: bool = True) -> tuple[float, int]:
    """Guided search replayed on a greedy episode: ``(gain %, evaluations)``, a lower bound (module doc).
    ``known``: the actions the ranker was trained on (None: every scored one). ``classes``/``kinds``: order
    by outcome classes / a pass's first variant first, as live guided search does
    (:func:`ptxopt.search.guided.demote_repeats`)."""
    from .guided import choose

    rng = kernel_rng(seed, episode[0].kernel)
    base = episode[0].cycles_before
    cycles, evals = base, 1
    for i, s in enumerate(episode):
        sc, gn = scored[id(s)]
        pick = [m.action for m in choose([_Move(a) for a in s.candidates], sc, top_k=top_k, threshold=threshold,
                                         rng=rng, gains=gn, known=known, explore=explore, at_root=i == 0,
                                         classes=classes_of(s) if classes else None,
                                         kinds=kinds_of(s) if kinds else None)]
        evals += len(pick)
        ok = [(s.candidates[a], a) for a in pick if s.candidates[a] is not None and s.candidates[a] < cycles]
        if not ok:
            break
        c = min(ok)[0]
        cycles = c
        if s.action not in pick or s.candidates[s.action] != c:  # off greedy's path: nothing after was measured
            break
    return 100.0 * (1 - cycles / base), evals


def replay_mean(scored: dict, episode, *, top_k: int, threshold: float, known=None, explore: int = 1,
                seeds: int = RANDOM_SEEDS, classes: bool = True, kinds: bool = True) -> tuple[float, float]:
    """:func:`replay` averaged over ``seeds`` draws of its random choices (ties, exploration slots)."""
    runs = [replay(scored, episode, top_k=top_k, threshold=threshold, seed=i, known=known, explore=explore,
                   classes=classes, kinds=kinds) for i in range(seeds)]
    return sum(g for g, _ in runs) / seeds, sum(e for _, e in runs) / seeds


def greedy_of(episode) -> tuple[float, int]:
    """Greedy's own ``(gain %, evaluations)`` on its episode."""
    base = episode[0].cycles_before
    return 100.0 * (1 - episode[-1].cycles_after / base), 1 + sum(len(s.candidates) for s in episode)


def topk_hit(keys: dict, hits: set, k: int) -> float:
    """The probability that the ``k`` first of an order by ``keys`` (action -> sort key, larger first; equal
    keys in a random order, as :func:`ptxopt.search.guided.order` breaks them) hold an action of ``hits``."""
    classes: dict = {}
    for a, key in keys.items():
        classes.setdefault(key, []).append(a)
    slots = k
    for key in sorted(classes, reverse=True):
        tied = classes[key]
        h = sum(1 for a in tied if a in hits)
        if len(tied) <= slots:
            if h:
                return 1.0
            slots -= len(tied)
            if slots == 0:
                return 0.0
            continue
        return 1.0 - math.comb(len(tied) - h, slots) / math.comb(len(tied), slots)
    return 0.0


def recall_states(episodes_, *, min_gain: float = 0.0):
    """``(step, hits)`` at each greedy state where greedy did not stop: the candidates within
    :data:`HIT_TOL` of the best candidate's cycles. ``min_gain``: only states whose best gains more than
    this fraction (0: every such state, the definition the targets use)."""
    for ep in episodes_:
        for s in ep:
            if s.action == STOP:
                continue
            usable = {a: c for a, c in s.candidates.items() if c is not None}
            if not usable:
                continue
            best = min(usable.values())
            if best >= s.cycles_before * (1 - min_gain):
                continue
            yield s, {a for a, c in usable.items() if c <= best * (1 + HIT_TOL)}


def recall(scored: dict | None, episodes_, k: int = 3, *, min_gain: float = 0.0,
           classes: bool = True, kinds: bool = True) -> tuple[float, int]:
    """``(hits, states)``: at each greedy state where greedy did not stop (:func:`recall_states`), is one of
    the ``k`` first-ordered actions within :data:`HIT_TOL` of the best candidate's cycles? The order is guided
    search's (:func:`ptxopt.search.guided.order`: score, then predicted gain); actions tied on both count by
    their chance under the random tie-break, so ``hits`` is an expectation. ``scored`` None: a random
    ranker's expected hits (every candidate tied). ``classes``/``kinds``: members of an outcome class but its
    first ordered last, a pass's variants but its first after every pass's first
    (:func:`ptxopt.search.guided.demote_repeats`), as guided search measures them."""
    from .guided import demote_repeats

    hits, n = 0.0, 0
    for s, near in recall_states(episodes_, min_gain=min_gain):
        if scored is None:
            keys = dict.fromkeys(s.candidates, (0.0, 0.0))
        else:
            sc, gn = scored[id(s)]
            keys = {a: (sc[a], gn.get(a, -math.inf)) for a in sc}
        if classes or kinds:
            keys = demote_repeats(keys, classes_of(s) if classes else None, kinds_of(s) if kinds else None)
        n += 1
        hits += topk_hit(keys, near, k)
    return hits, n


def choose_setting(table: dict, spread: dict | None = None) -> tuple:
    """The setting (``(order, top_k, explore, threshold)``) with the most gain relative to greedy among those
    within :data:`EVAL_CAP` of greedy's evaluations (gains within 0.01 of greedy's are ties: then fewer
    evaluations, then -- at equal evaluations -- a learned order before a random one, then the earlier order
    of :data:`~ptxopt.search.ranker.ORDERS`); none within: the cheapest.

    ``spread``: setting -> the standard error of its gain over the folds (:func:`tune`). With it the order
    model is chosen by the one-standard-error rule (Breiman et al. 1984; Hastie, Tibshirani and Friedman,
    *Elements of Statistical Learning* 7.10): the simplest learned order (the first of ``ORDERS``) whose best
    setting within the cap gains at least the best setting's gain less its standard error, then that order's
    setting as above. A fold here is a whole group, and a few groups decide the folds' gain, so a more
    complex order that wins by less than the folds disagree is not kept: a margin that small says which
    groups were in the folds, not what transfers to a group none of them held."""
    from .ranker import ORDERS

    within = [s for s, (g, e) in table.items() if e <= EVAL_CAP]
    if not within:
        return min(table, key=lambda s: (table[s][1], -table[s][0]))

    def key(s):
        return round(table[s][0], 2), -round(table[s][1], 4), s[1] > 0, -ORDERS.index(s[0])

    best = max(within, key=key)
    if spread and best[1] > 0:
        floor = table[best][0] - spread.get(best, 0.0)
        for o in ORDERS[:ORDERS.index(best[0])]:
            simpler = [s for s in within if s[0] == o and s[1] > 0]
            if simpler and max(table[s][0] for s in simpler) >= floor:
                return max([s for s in within if s[0] == o], key=key)
    return best


def tune(steps: Sequence, kernel_groups: dict, *, actions: Sequence[str], seed: int = 0, max_iter: int = 60,
         folds: int | None = None) -> tuple[tuple[str, int, int, float], dict]:
    """``((order, top_k, explore, threshold), table)`` chosen by replay over group-wise folds of ``steps``' own
    groups (:func:`choose_setting`); the defaults when no fold kernel gains under greedy (nothing to tune on).
    ``top_k`` 0 (a random order) is tried once, under the first order model (it reads no order).

    ``table``: ``"order/k/explore/threshold" -> [gain fraction of greedy's, evaluation fraction of greedy's,
    the gain's standard error over the folds where greedy gains (when two or more do)]``."""
    from .ranker import EXPLORE, ORDERS, THRESHOLD, TOP_K, train_each

    groups = sorted({g for g in kernel_groups.values() if g})
    order = list(np.random.default_rng(seed).permutation(groups))
    n = min(folds or FOLDS or len(order), len(order))
    fold_of = {g: i % n for i, g in enumerate(order)}
    grid = [(o, k, x, t) for o in ORDERS for k in TOP_KS for x in EXPLORES for t in THRESHOLDS
            if k > 0 or o == ORDERS[0]]
    sums = {okxt: [0.0, 0.0] for okxt in grid}
    greedy_gain = greedy_evals = 0.0
    fold_gain: dict[int, dict] = {}  # fold -> setting -> its replayed gain there; with the fold's greedy gain
    fold_greedy: dict[int, float] = {}
    for f in range(n):
        train_steps = [s for s in steps if fold_of.get(kernel_groups.get(s.kernel)) not in (f, None)]
        test = greedy_episodes(s for s in steps if fold_of.get(kernel_groups.get(s.kernel)) == f)
        if not train_steps or not test:
            continue
        try:
            rks = train_each(train_steps, ORDERS, actions=actions, seed=seed, max_iter=max_iter)
        except ValueError:
            continue
        test_steps = [s for ep in test for s in ep]
        scored = {o: score_steps(rk, test_steps) for o, rk in rks.items()}
        for ep in test:
            g, e = greedy_of(ep)
            greedy_gain += max(g, 0.0)
            greedy_evals += e
            fold_greedy[f] = fold_greedy.get(f, 0.0) + max(g, 0.0)
            per = fold_gain.setdefault(f, dict.fromkeys(sums, 0.0))
            for (o, k, x, t), acc in sums.items():
                rg, re_ = replay_mean(scored[o], ep, top_k=k, threshold=t, known=rks[o].actions, explore=x)
                acc[0] += rg
                acc[1] += re_
                per[(o, k, x, t)] += rg
    table = {okxt: (acc[0] / greedy_gain if greedy_gain > 0 else math.nan,
                    acc[1] / greedy_evals if greedy_evals else math.inf) for okxt, acc in sums.items()}
    spread = fold_spread(fold_gain, fold_greedy)
    shown = {f"{o}/{k}/{x}/{t:g}": [round(g, 4), round(e, 4)] + ([round(spread[o, k, x, t], 4)] if spread else [])
             for (o, k, x, t), (g, e) in table.items()}
    if greedy_gain <= 0:
        return (ORDERS[0], TOP_K, EXPLORE, THRESHOLD), shown
    return choose_setting(table, spread), shown


def fold_spread(fold_gain: dict, fold_greedy: dict) -> dict:
    """setting -> the standard error of its gain fraction over the folds where greedy gains (each fold's
    replayed gain over greedy's there, equally weighted); empty with fewer than two such folds (no spread
    to estimate, and :func:`choose_setting` then takes the best setting as it is)."""
    gaining = [f for f, g in fold_greedy.items() if g > 0]
    if len(gaining) < 2:
        return {}
    settings = fold_gain[gaining[0]]
    return {s: float(np.std([fold_gain[f][s] / fold_greedy[f] for f in gaining], ddof=1) / math.sqrt(len(gaining)))
            for s in settings}


def train_tuned(steps: Sequence, groups: dict[str, str] | None, *, actions: Sequence[str] | None = None,
                seed: int = 0, max_iter: int = 200, tune_iter: int | None = None, note: dict | None = None,
                top_k: int | None = None, threshold: float | None = None, order: str | None = None):
    """:func:`ptxopt.search.ranker.train` with the order model and ``top_k``/``explore``/``threshold`` chosen
    by :func:`tune` on the training kernels' own groups (``groups``: kernel -> group; ``tune_iter`` boosting
    iterations per fold, default ``max_iter``) when they name at least two; else the defaults. Given ones are
    kept (a given ``top_k`` comes with one exploration slot)."""
    from .ranker import EXPLORE, ORDERS, THRESHOLD, TOP_K, default_actions, train

    steps = list(steps)
    actions = default_actions(steps) if actions is None else actions
    note = dict(note or {})
    if top_k is None or threshold is None or order is None:
        kernel_groups = {s.kernel: (groups or {}).get(s.kernel) for s in steps}
        if len({g for g in kernel_groups.values() if g}) >= 2:
            (o, k, x, t), table = tune(steps, kernel_groups, actions=actions, seed=seed,
                                       max_iter=tune_iter or max_iter)
            note["tuned"] = {"order": o, "top_k": k, "explore": x, "threshold": t if math.isfinite(t) else None,
                             "on": "held-out folds of the training groups",
                             "rule": "one standard error (choose_setting); a grid entry's third value is its gain's "
                                     "standard error over the folds where greedy gains",
                             "grid order/k/explore/threshold (gain, evaluations: fractions of greedy's)": table}
        else:
            o, k, x, t = ORDERS[0], TOP_K, EXPLORE, THRESHOLD
        explore = x if top_k is None else 1
        top_k = k if top_k is None else top_k
        threshold = t if threshold is None else threshold
        order = o if order is None else order
    else:
        explore = 1
    return train(steps, actions=actions, seed=seed, max_iter=max_iter, note=note, top_k=top_k, threshold=threshold,
                 explore=explore, order=order)
