"""What the learning layer adds to ptxopt (the ``ptxopt.plugins`` entry point ``rl``).

Registered as lazy references: loading this plugin imports neither torch
nor anything else of :mod:`rl`; each reference is imported where ptxopt
uses it (``ptxopt train``, ``ptxopt search --policy``, the Triton hook's
``PolicyPipelines``), which is where an ImportError (no torch) is reported.
"""

from __future__ import annotations


def register(registry) -> None:
    """Register with :class:`ptxopt.plugins.Registry`."""
    registry.command("train", "ptxopt_rl.cli:train_cmd")
    registry.strategy("policy", "ptxopt_rl.rollout:policy_search")
    registry.object("load_policy", "ptxopt_rl.checkpoint:load_policy")
    registry.object("CheckpointError", "ptxopt_rl.checkpoint:CheckpointError")


__all__ = ["register"]
