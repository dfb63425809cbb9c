"""Forget every in-process memo of the front end at once.

The printer, the ISA queries, the analyses and search states remember
answers about immutable instructions and printed texts (instruction text,
roles, registers, CFGs, dependency graphs, action-mask facts), and the
evaluator the module after each pipeline it ran (its prefixes), so that the
~20 candidates of a search state share the work. A benchmark that measures
a *cold* first look clears them all here instead of reaching into each
module's private tables: each of those memos registers itself under the
``front_end`` group of :mod:`ptxopt.support.bounded_memo` (a memo of a module
not imported yet is empty anyway). The operand facts (roles, registers, addresses:
:mod:`ptxopt.ptx.operand_facts`) are not a memo: they live on each instruction,
so a cold measurement parses the module afresh as well.
"""

from __future__ import annotations


def clear_front_end() -> None:
    from ptxopt.ptx import identity_memo
    from ptxopt.evaluate import prefix
    from ptxopt.support.bounded_memo import clear_group

    identity_memo.clear_all()
    # DAGs, dependence graphs, CFGs (with each shape's cfg.shared: prefetch plans,
    # reorder runs), action-mask facts, and answers per instruction form
    clear_group("front_end")
    prefix.clear_all()  # the modules of evaluated pipelines, per original


__all__ = ["clear_front_end"]
