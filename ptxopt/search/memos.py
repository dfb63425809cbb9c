"""Forget every in-process memo of the front end at once.

The printer, the ISA queries, the analyses and search states remember
answers about immutable instructions and printed texts (instruction text,
roles, registers, CFGs, dependency graphs, action-mask facts), and the
evaluator the module after each pipeline it ran (its prefixes), so that the
~20 candidates of a search state share the work. A benchmark that measures
a *cold* first look clears them all here instead of reaching into each
module's private tables. The operand facts (roles, registers, addresses:
:mod:`ptxopt.ptx.operand_facts`) are not a memo: they live on each instruction,
so a cold measurement parses the module afresh as well.
"""

from __future__ import annotations


def clear_front_end() -> None:
    from ptxopt.ptx import identity_memo, operand_facts
    from ptxopt.analysis import cfg_memo, dag, depgraph, latency
    from ptxopt.evaluate import prefix
    from ptxopt.passes import cache_hints, readonly_path
    from ptxopt.evaluate import move_memo

    identity_memo.clear_all()
    dag.clear_memo()
    depgraph.clear_memo()
    cfg_memo.clear_memo()  # with each shape's cfg.shared (prefetch plans, reorder runs)
    move_memo.clear_memo()
    prefix.clear_all()  # the modules of evaluated pipelines, per original
    # answers per instruction form (opcode and modifiers): a few dozen entries
    operand_facts._FORMS.clear()
    latency._BY_FORM.clear()
    cache_hints._with_cache_op.cache_clear()
    readonly_path._nc_modifiers.cache_clear()


__all__ = ["clear_front_end"]
