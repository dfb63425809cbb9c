"""Equivalence checks that remember the original kernel's outputs.

A search evaluates many candidates of one kernel; :func:`ptxopt.verify.verify`
would interpret the *original* again for every one of them, which is half of
the interpreter's work. :func:`verify_with_reference` is ``verify`` with its
``reference`` memo set to a per-process LRU of the original's final buffers
per (original, entry, launch, seed, trial), so each is computed once.
``tests/test_evaluate.py`` checks that both agree on equal, mismatching and
faulting candidates.

An original that cannot be interpreted raises its :class:`InterpError` (as
``verify`` does), and that failure is remembered too.
"""

from __future__ import annotations

from collections import OrderedDict

from ptxopt.verify import DEFAULT_SEEDS, VerifyResult, verify

REFERENCE_SIZE = 128  # (kernel, trial) entries kept per process


class _LRU(OrderedDict):
    """A mapping that keeps the REFERENCE_SIZE most recently used entries."""

    def get(self, key, default=None):
        if key in self:
            self.move_to_end(key)
            return self[key]
        return default

    def __setitem__(self, key, value):
        super().__setitem__(key, value)
        while len(self) > REFERENCE_SIZE:
            self.popitem(last=False)


_REFERENCE = _LRU()


def clear() -> None:
    _REFERENCE.clear()


def verify_with_reference(original, transformed, entry: str, reference_key: str, *, trials: int, spec=None,
                          geometry=None, seeds=DEFAULT_SEEDS, max_steps: int | None = None,
                          min_coverage: float | None = None) -> VerifyResult:
    """:func:`ptxopt.verify.verify` for interpreter :class:`~ptxopt.interp.Program` s,
    with the original's runs memoised under ``reference_key`` (which must
    identify the original module and the launch). ``min_coverage``: an
    ``equal`` whose launches stored less of the written buffers than this, or
    whose regular launches the original could not all run, is
    ``inconclusive`` (None: never)."""
    return verify(original, transformed, entry, seeds, trials, spec=spec, geometry=geometry,
                  max_steps=max_steps, reference=_REFERENCE, reference_key=reference_key,
                  min_coverage=min_coverage)


__all__ = ["verify_with_reference", "clear", "REFERENCE_SIZE"]
