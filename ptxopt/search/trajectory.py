"""Trajectories: what every search records for the learning layer.

Format: JSON Lines, one object per step (an episode is the steps sharing
``kernel``, ``strategy`` and ``episode``, ordered by ``step``). Keys:

``schema``           1
``kernel``           corpus id or file name
``strategy``         greedy | beam | random | exhaustive | policy
``episode``          index of the episode within this kernel's search
``step``             0-based position in the episode
``pipeline``         canonical pipeline *before* the action
``observation``      the state's observation vector (see
                     :func:`ptxopt.search.state.observation_names`: kernel
                     features of the current module, active families, step)
``action_mask``      one int per action (1 = legal), in the order of
                     :data:`ptxopt.search.actions.ACTIONS`, ``stop`` last
``action``           the action taken (its canonical string), or ``stop``
``action_index``     its index in :data:`ptxopt.search.actions.ACTIONS`
``cycles_before``    cycles of the state before the action
``cycles_after``     cycles after it (equal to before for ``stop``)
``reward``           ``log(before / after) - step_cost``; 0 for ``stop``
``candidates``       {action: cycles or null} for every legal action the
                     strategy measured from this state (greedy: all of them)
``estimate``         true when cycles are the sim model's estimate
``backend``, ``arch``

Optional (absent in older files, which stay readable; a ranker treats them
as unknown, see :mod:`ptxopt.search.rank_features`):

``context``          the state's context: objective, launch, ptxas
                     registers and spills, occupancy and its limiter
                     (:data:`~ptxopt.search.rank_features.CONTEXT_NAMES`;
                     null = unknown)
``objective``        latency | throughput: what the cycles are
``reward_model``     which reward the cycles hold: the backend and its
                     version (for the sim, the digest of the model's source)
``verdicts``         {action: equivalence verdict, or the failure status}
                     for every measured candidate
``action_features``  {action: [...]} per legal action, from applying the
                     pass only (:func:`~ptxopt.search.rank_features.action_features`)

The reward telescopes: an episode's rewards sum to the log speedup of its
final pipeline minus ``step_cost`` per pass. ``stop`` costs nothing.
"""

from __future__ import annotations

import json
import math
import sys
from contextlib import nullcontext
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Iterable, Iterator

from ptxopt.support import jsontext
from ptxopt.search.actions import STOP, action_index
from ptxopt.toolchain.arch import DEFAULT_ARCH

SCHEMA = 1

#: Per-step cost in the reward (BRIEF section 5).
STEP_COST = 0.005


def reward(cycles_before: float, cycles_after: float, *, step_cost: float = STEP_COST) -> float:
    """The per-step reward of one pass: the log speedup minus the step cost."""
    return math.log(cycles_before / cycles_after) - step_cost


@dataclass
class Step:
    kernel: str
    strategy: str
    episode: int
    step: int
    pipeline: str
    observation: list[float]
    action_mask: list[int]
    action: str
    cycles_before: float
    cycles_after: float
    reward: float
    candidates: dict[str, float | None] = field(default_factory=dict)
    estimate: bool = True
    backend: str = "sim"
    arch: str = DEFAULT_ARCH
    schema: int = SCHEMA
    context: dict | None = None
    objective: str | None = None
    reward_model: str | None = None
    verdicts: dict | None = None
    action_features: dict | None = None

    @property
    def action_index(self) -> int:
        return action_index(self.action)

    def to_json(self) -> dict:
        d = asdict(self)
        d["action_index"] = self.action_index
        for k in _OPTIONAL:  # the optional keys only when known (files stay as they were without them)
            if d[k] is None:
                del d[k]
        return d

    @classmethod
    def from_json(cls, d: dict) -> "Step":
        if not isinstance(d, dict):
            raise ValueError(f"expected a JSON object, got {type(d).__name__}")
        if d.get("schema") != SCHEMA:
            raise ValueError(f"trajectory schema {d.get('schema')!r}, expected {SCHEMA}")
        d = dict(d)
        d.pop("action_index", None)
        if isinstance(d.get("action_mask"), list):
            d["action_mask"] = widen_mask(d["action_mask"])
        return cls(**d)


def widen_mask(mask: list) -> list:
    """A mask recorded under an older action list, in this one's layout. The
    pass actions are append-only and ``stop`` comes last, so a mask of ``L``
    slots was recorded over the first ``L - 1`` pass actions and ``stop``:
    the actions appended since were not offered (0). Any other length is
    returned as it is (and refused where it is used)."""
    from ptxopt.search.actions import N_ACTIONS

    if 1 <= len(mask) < N_ACTIONS:
        return [*mask[:-1], *[0] * (N_ACTIONS - len(mask)), mask[-1]]
    return mask


_OPTIONAL = ("context", "objective", "reward_model", "verdicts", "action_features")


def _json_number(x):
    return None if isinstance(x, float) and not math.isfinite(x) else x


def reward_model(backend: str) -> str:
    """What a trajectory's cycles are: the backend and its version (the sim: its model source's digest)."""
    try:
        from ptxopt.measure.backend_registry import backend_version, get_backend

        version = backend_version(get_backend(backend))
    except Exception:  # an unavailable backend: its name alone
        version = ""
    return f"{backend}:{version}" if version else backend


def make_step(state, action: str, before: float, after: float, *, kernel: str, strategy: str, episode: int,
              index: int, candidates: dict | None = None, options=None, result=None, measured=None) -> Step:
    """A :class:`Step` from a search state (observation and mask taken from it).

    ``result``: the state's own evaluation (its context is recorded);
    ``measured``: ``[(move, result), ...]`` for the candidates measured from it
    (their verdicts and action features are recorded)."""
    r = 0.0 if action == STOP else reward(before, after)
    extra = {}
    if options is not None:
        from ptxopt.toolchain.arch import resolve_arch

        extra = dict(backend=options.backend, arch=resolve_arch(state.kernel.ptx, options.arch),
                     estimate=options.estimate, reward_model=_reward_model(options.backend))
    if result is not None:
        from .rank_features import state_context

        extra["context"] = {k: _json_number(v) for k, v in state_context(state, result).items()}
        extra["objective"] = result.objective
    if measured is not None:
        from .rank_features import action_features

        extra["verdicts"] = {m.action: ("unmeasured" if res is None else res.equivalence if res.ok else res.status)
                             for m, res in measured}  # unmeasured: the budget ran out
        extra["action_features"] = {m.action: [_json_number(x) for x in action_features(state, m.child)]
                                    for m, _ in measured}
    return Step(kernel=kernel, strategy=strategy, episode=episode, step=index, pipeline=str(state.pipeline),
                observation=[float(x) for x in state.observation()],
                action_mask=[int(x) for x in state.action_mask()], action=action, cycles_before=before,
                cycles_after=after, reward=r, candidates=dict(candidates or {}), **extra)


_MODELS: dict[str, str] = {}


def _reward_model(backend: str) -> str:
    if backend not in _MODELS:
        _MODELS[backend] = reward_model(backend)
    return _MODELS[backend]


def write_jsonl(steps: Iterable[Step], path: str | Path, *, append: bool = False) -> int:
    n = 0
    with open(path, "a" if append else "w") as f:
        for s in steps:
            f.write(json.dumps(s.to_json(), sort_keys=True) + "\n")
            n += 1
    return n


def read_jsonl(path: str | Path) -> Iterator[Step]:
    """The steps recorded in ``path`` (``-``: standard input). A line that is
    not UTF-8 or not a step record is a ValueError naming FILE:LINE."""
    name = "<stdin>" if str(path) == "-" else str(path)
    with (nullcontext(sys.stdin.buffer) if name == "<stdin>" else open(path, "rb")) as f:
        for lineno, raw in enumerate(f, 1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                raise ValueError(f"{name}:{lineno}: not UTF-8 text (byte 0x{raw[e.start]:02x} at column "
                                 f"{e.start + 1})") from None
            if line.strip():
                try:
                    yield Step.from_json(jsontext.loads(line))
                except (ValueError, TypeError) as e:
                    raise ValueError(f"{name}:{lineno}: bad trajectory record: {e}") from None


def episodes(steps: Iterable[Step]) -> list[list[Step]]:
    """Group steps into episodes (by kernel, strategy, episode), each ordered by step."""
    groups: dict[tuple, list[Step]] = {}
    for s in steps:
        groups.setdefault((s.kernel, s.strategy, s.episode), []).append(s)
    return [sorted(g, key=lambda s: s.step) for g in groups.values()]
