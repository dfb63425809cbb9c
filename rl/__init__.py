"""The learning layer: which passes to apply, learned from search.

* :mod:`rl.env`        -- a Gymnasium environment over pass pipelines
* :mod:`rl.policy`     -- the policy network (an MLP on kernel features)
* :mod:`rl.bc`         -- behaviour cloning from greedy-search trajectories
* :mod:`rl.grpo`       -- GRPO fine-tuning against the evaluator
* :mod:`rl.rollout`    -- policy rollouts (GRPO, ``ptxopt search --policy``)
* :mod:`rl.checkpoint` -- saving and loading policies safely
* :mod:`rl.cli`        -- ``ptxopt train``
* :mod:`rl.plugin`     -- what this layer registers with ptxopt (:mod:`ptxopt.plugins`):
  ``train``, the ``policy`` search strategy, the checkpoint loader

torch is imported only in this package, and :mod:`ptxopt` never imports it (it stays usable without
it; ``tests/project/test_import_contract.py``).
The design (reward, state, GRPO) is BRIEF section 5.
"""
