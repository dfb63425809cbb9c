"""A search state: one kernel after one pass pipeline, and the moves out of it.

Every search strategy and the RL environment walk the same graph: a node is
the kernel's module after a pipeline, an edge appends one pass. The action
mask comes from the pass API alone (no ptxas, no measurement): an action is
legal when the pass does not conflict with the pipeline so far (its
family's rules), the pass accepts the module (:meth:`Pass.check_legal`), and
applying it *changes the printed module*. The last rule matters most: a
pass that changes nothing would cost a measurement and a step for a reward
of exactly ``-step_cost``, and two pipelines that print the same text are
the same state (strategies use :attr:`State.digest` as a transposition key).

The actions, their order and the mask layout are
:data:`ptxopt.search.actions.ACTIONS`; ``stop`` (the last action) is always
legal.

A pass that depends on the launch (:attr:`ptxopt.passes.base.Pass.uses_launch`:
``launch_bounds`` needs the block, which an nvcc entry without ``.reqntid``
does not state) is applied bound to the kernel's performance launch,
exactly as the evaluator binds it for the state's pipeline
(:func:`ptxopt.evaluate.candidate.bind_launch`); the pipeline keeps the
action's own string (the evaluator binds it again, the same way). A child's
candidate carries the child's module, its bound passes and their records
(:meth:`State.candidate`), and the evaluator measures that module: each pass
of a search is applied once. Passes are deterministic (the same module and
pass print the same output), which the transposition key
(:attr:`State.digest`) relies on as well.

The module-dependent part of that decision (legal? changes the printed
module?) is remembered per printed module -- and per performance launch
when an action uses the launch -- by :mod:`ptxopt.evaluate.move_memo`
(in process, and in a file beside the evaluation cache when the state was
made with one): a state whose facts are known computes its mask without
applying any pass and builds a child only for the action taken
(:meth:`State.child`); :meth:`State.moves` still builds every child, for
strategies that measure them all.

Each pass application of a mask runs under the evaluator's per-candidate
time limit (:class:`PassLimit`, ``search --timeout``; SIGALRM, so in the
main thread only: elsewhere a pass is not interrupted): a pass that overruns
it is masked (``timeout: ...``) here and, without being applied again, in
every other state of the same search. A timeout is not a fact about the
module, so the move memo does not keep it. What a pass prints is kept off
stdout (:mod:`ptxopt.support.pass_output`).
"""

from __future__ import annotations

import hashlib
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from ptxopt.evaluate import Candidate
from ptxopt.evaluate.candidate import DEFAULT_TIMEOUT, bind_launch, entry_of, performance_for
from ptxopt.evaluate.deadline import CandidateTimeout, StepClock, per_step
from ptxopt.support.gc_pause import gc_paused
from ptxopt.ptx.ir import Module
from ptxopt.support.pass_output import captured
from ptxopt.passes.base import IllegalPass, PassError
from ptxopt.passes.passmanager import PassRecord
from ptxopt.passes.pipeline import Pipeline
from ptxopt.search.actions import N_ACTIONS, PASS_ACTIONS, STOP, STOP_INDEX, action_pass, families
from ptxopt.evaluate.move_memo import MoveMemo


@dataclass(frozen=True)
class Move:
    """One action out of a state: legal (with the child state) or masked (with why)."""

    action: str
    child: "State | None" = None
    reason: str | None = None

    @property
    def legal(self) -> bool:
        return self.child is not None


@dataclass
class PassLimit:
    """How long one pass application of an action mask may take (None: no
    limit), and the passes that took longer in this search (masked from then on)."""

    seconds: float | None = DEFAULT_TIMEOUT
    overran: set = field(default_factory=set)
    clock: StepClock = field(default_factory=lambda: StepClock(None))  # the running one (:meth:`State._applying`)


@dataclass(eq=False)
class State:
    """``kernel`` (a :class:`Candidate` whose ``pipeline`` is ignored) after ``pipeline``.

    ``module`` and :attr:`printed` are the transformed module and its text
    (a child is printed when first asked: the mask decides "changes the
    module" without printing, :mod:`ptxopt.ptx.print_compare`, and most children
    are never visited). Children are computed once (:meth:`moves`) and kept.
    """

    kernel: Candidate
    pipeline: Pipeline
    module: Module
    text: str | None  # the printed module; None until :attr:`printed` is first read
    _moves: list[Move] | None = field(default=None, repr=False)
    memo: MoveMemo | None = field(default=None, repr=False)  # shared by the whole tree
    _facts: dict | None = field(default=None, repr=False)  # pass -> None (changes) | reason
    _kids: dict = field(default_factory=dict, repr=False)  # pass -> Move, built one at a time
    #: the pass actions explored from here: :data:`PASS_ACTIONS`, then any extra ones (a user's plugin
    #: passes, ``search --actions +name``); the learning layer's mask covers :data:`PASS_ACTIONS` only
    actions: tuple[str, ...] = field(default=PASS_ACTIONS, repr=False)
    #: ``(performance launch or None, entry)``: what passes that use the launch are bound to
    #: (:func:`ptxopt.evaluate.candidate.bind_launch`); the kernel's, found at the root and handed down
    binding: tuple | None = field(default=None, repr=False)
    #: the time limit of a pass application, shared by the whole tree
    limit: PassLimit = field(default_factory=PassLimit, repr=False)
    #: the passes of ``pipeline`` as applied (bound to the launch) and their pass records: with
    #: ``module``, what the evaluator measures for this state without applying them again
    applied: tuple = field(default=(), repr=False)
    records: tuple = field(default=(), repr=False)

    def __post_init__(self) -> None:
        if self.binding is None:
            self.binding = (performance_for(self.kernel), entry_of(self.kernel, self.module))

    @classmethod
    def root(cls, kernel: Candidate, memo: MoveMemo | None = None, extra_actions: tuple[str, ...] = (),
             dropped_actions: tuple[str, ...] = (), timeout: float | None = DEFAULT_TIMEOUT) -> "State":
        """The unoptimised kernel (raises the parser's error for bad PTX).
        ``memo`` remembers which passes change which modules (see the module doc);
        default: this process only. ``timeout``: seconds one pass application may
        take (the evaluator's per-candidate limit; None: no limit)."""
        from ptxopt.ptx.emit import emit
        from ptxopt.ptx.parser import parse

        module = parse(kernel.ptx, filename=kernel.label)
        actions = tuple(a for a in PASS_ACTIONS if a not in dropped_actions)
        actions += tuple(a for a in extra_actions if a not in actions)
        return cls(kernel, Pipeline(), module, emit(module), memo=memo or MoveMemo(None), actions=actions,
                   limit=PassLimit(timeout))

    @property
    def printed(self) -> str:
        """The module's text (printed on first use)."""
        if self.text is None:
            from ptxopt.ptx.emit import emit

            self.text = emit(self.module)
        return self.text

    @property
    def depth(self) -> int:
        return len(self.pipeline)

    @cached_property
    def digest(self) -> str:
        """Transposition key: the hash of the printed module."""
        return hashlib.sha256(self.printed.encode()).hexdigest()

    @property
    def entry(self) -> str | None:
        """The entry evaluated (:func:`ptxopt.evaluate.candidate.entry_of`)."""
        return self.binding[1]

    @cached_property
    def memo_launch(self) -> str:
        """What the move memo's facts of this state depend on besides the
        printed module: the entry and the performance launch when any of the
        actions uses the launch, else nothing (a launch-free outcome is never
        reused for a launch-bound state, nor one launch's for another's)."""
        perf, entry = self.binding
        if perf is None or not any(action_pass(a).uses_launch for a in self.actions):
            return ""
        return f"{entry}\0{perf.key()}"

    def candidate(self) -> Candidate:
        """What the evaluator measures for this state: the kernel, the pipeline
        (already parsed: the Candidate keeps it) and this state's module, which
        the evaluator measures as it is (the passes are not applied again)."""
        from dataclasses import replace

        from ptxopt.evaluate.prefix import Built

        cand = replace(self.kernel, pipeline=self.pipeline)
        if not self.applied:
            return cand
        return cand.with_built(Built(self.applied, self.module, self.records))

    def moves(self) -> list[Move]:
        """Every pass action in action order (not ``stop``), legal or masked."""
        if self._moves is None:
            with self._applying():
                self._moves = [self._kids.get(name) or self._move(name) for name in self.actions]
            self._kids.clear()
            self._remember({m.action: m.reason for m in self._moves if not _not_a_fact(m)})
        return self._moves

    def _remember(self, facts: dict) -> None:
        known = dict(self._facts or {})
        known.update(facts)
        if known != self._facts:
            self._facts = known
            if self.memo is not None:
                self.memo.put(self.digest, known, self.memo_launch)

    def facts(self) -> dict:
        """``pass -> None`` (legal and changes the module) or the reason it is
        masked, for every pass that does not conflict with the pipeline;
        from the memo when known, else by applying the passes."""
        if self._facts is None and self.memo is not None:
            self._facts = self.memo.get(self.digest, self.memo_launch)
        if self._facts is not None:
            missing = [n for n in self.actions if n not in self._facts and not self._conflict(n)]
            if not missing:
                return self._facts
            if len(missing) < len(self.actions):
                with self._applying():
                    for n in missing:
                        self._kids[n] = self._move(n)
                self._remember({n: self._kids[n].reason for n in missing if not _not_a_fact(self._kids[n])})
                return self._facts
        self.moves()
        return self._facts or {}

    @contextmanager
    def _applying(self):
        """Around applying passes (:meth:`_move`): one burst of allocation (see
        :mod:`ptxopt.support.gc_pause`), one capture of stdout and one timer handler for
        all; each pass's own limit and capture inside then cost a few syscalls."""
        limit = self.limit
        with gc_paused(), captured("a pass of the action mask"), per_step(limit.seconds) as clock:
            outer, limit.clock = limit.clock, clock
            try:
                yield
            finally:
                limit.clock = outer

    def _conflict(self, name: str) -> str | None:
        return self.pipeline.can_append(action_pass(name))

    def _move(self, name: str) -> Move:
        from ptxopt.ptx.emit import emit
        from ptxopt.ptx.print_compare import prints_same

        p = action_pass(name)
        why = self.pipeline.can_append(p)
        if why:
            return Move(name, reason=f"conflict: {why}")
        try:  # as the evaluator applies it: a pass that uses the launch bound to the performance launch
            bound = bind_launch(p, *self.binding)
        except PassError as e:  # the pass names a block the launch does not have (the evaluator: illegal)
            return Move(name, reason=f"illegal: {e}")
        limit = self.limit
        if name in limit.overran:
            return Move(name, reason=f"timeout: took longer than {limit.seconds:g} s on an earlier state")
        try:
            limit.clock.start()
            t0 = time.perf_counter()
            try:
                module, report = bound.apply(self.module)  # check_legal first
            finally:
                limit.clock.stop()
            seconds = time.perf_counter() - t0
        except CandidateTimeout:
            limit.overran.add(name)
            return Move(name, reason=f"timeout: the pass took longer than {limit.seconds:g} s")
        except IllegalPass as e:
            return Move(name, reason=f"illegal: {e}")
        except Exception as e:  # a crashing pass is masked, never fatal to a search
            return Move(name, reason=f"internal: {type(e).__name__}: {e}")
        printed = None
        same = prints_same(self.module, module)  # mostly decided without printing
        if same is None:
            printed = emit(module)
            same = printed == self.printed
        if same:
            return Move(name, reason="no change")
        return Move(name, child=State(self.kernel, self.pipeline + p, module, printed, memo=self.memo,
                                      actions=self.actions, binding=self.binding, limit=limit,
                                      applied=(*self.applied, bound),
                                      records=(*self.records, PassRecord(bound.name, report, seconds))))

    def legal_moves(self) -> list[Move]:
        return [m for m in self.moves() if m.legal]

    def action_mask(self) -> np.ndarray:
        """Boolean mask over the :data:`N_ACTIONS` actions (``stop`` always legal)."""
        mask = np.zeros(N_ACTIONS, dtype=bool)
        if self._moves is not None:
            for i, m in enumerate(self._moves[:len(PASS_ACTIONS)]):
                mask[i] = m.legal
        else:
            facts = self.facts()
            for i, name in enumerate(PASS_ACTIONS):
                mask[i] = name in facts and facts[name] is None and not self._conflict(name)
        mask[STOP_INDEX] = True
        return mask

    def child(self, action: str) -> "State":
        """The state after ``action`` (an action string); raises ValueError when it is masked."""
        if action == STOP:
            return self
        if action not in self.actions:
            raise ValueError(f"unknown action {action!r}")
        if self._moves is not None:
            m = next(m for m in self._moves if m.action == action)
        else:
            m = self._kids.get(action)
            if m is None:
                with self._applying():
                    m = self._kids[action] = self._move(action)
                if not _not_a_fact(m):
                    known = (self._facts or {}).get(action, m.reason)
                    if (known is None) != (m.reason is None):  # the memo disagrees with the pass: trust the pass
                        self._facts = None
                    self._remember({action: m.reason})
        if not m.legal:
            raise ValueError(f"action {action!r} is masked here: {m.reason}")
        return m.child

    def active_families(self) -> np.ndarray:
        """1.0 for each family of :func:`~ptxopt.search.actions.families` that has a pass in the pipeline."""
        active = {p.family for p in self.pipeline}
        return np.array([1.0 if f in active else 0.0 for f in families()])

    @cached_property
    def features(self) -> np.ndarray:
        """The kernel feature vector of the *current* module (see :mod:`ptxopt.analysis.features`)."""
        from ptxopt.analysis.features import feature_vector

        compute = lambda: feature_vector(self.module, self.entry)  # noqa: E731
        if self.memo is None:
            return compute()
        return self.memo.features(self.digest, self.entry, compute)

    def observation(self) -> np.ndarray:
        """What the policy sees: features, active families, step count (see :func:`observation_names`)."""
        return np.concatenate([self.features, self.active_families(), [float(self.depth)]])


def _not_a_fact(m: Move) -> bool:
    """A masked move whose reason is not a fact about the module (the move memo
    keeps no such reason): a conflict with the pipeline, or a timeout."""
    return m.reason is not None and m.reason.startswith(("conflict: ", "timeout: "))


def new_children(states, skip: set[str]) -> list["State"]:
    """The legal children of ``states``, each distinct module once (first
    found), none whose digest is in ``skip``."""
    out, seen = [], set(skip)
    for s in states:
        for m in s.legal_moves():
            if m.child.digest not in seen:
                seen.add(m.child.digest)
                out.append(m.child)
    return out


def observation_names() -> list[str]:
    """Names of the :meth:`State.observation` slots, in order."""
    from ptxopt.analysis.features import FEATURE_NAMES

    return [*FEATURE_NAMES, *(f"active:{f}" for f in families()), "step"]
