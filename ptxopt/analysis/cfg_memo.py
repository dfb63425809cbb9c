"""CFGs remembered by the identity of a function's statements.

A search state tries every pass on copies of one module: the four
``reorder_*`` passes each build the same function's :class:`~ptxopt.analysis.cfg.CFG`
(~10 ms on a 5,000-instruction kernel). Module copies share every statement
(statements are immutable; only ``{ }`` containers are copied,
:meth:`ptxopt.ptx.ir.Module.copy`), so a function whose body holds the same
statement objects in the same nesting has the same CFG. :func:`cfg_of`
returns a shallow copy of the remembered CFG whose ``function`` is the
caller's, so nothing reaches a function another caller rewrote since.
Callers must treat the CFG's lists as read-only (as every analysis does).

``cfg.shared`` is one dict per remembered shape, the same object in every
copy: what a pass derives from the function's shape alone and another pass
(or policy) would derive again can be kept there (``prefetch_L1`` and
``prefetch_L2`` share their plan).
"""

from __future__ import annotations

import copy

from ptxopt.analysis.cfg import CFG, build_cfg
from ptxopt.ptx.ir import Block, Function
from ptxopt.support.bounded_memo import BoundedMemo, register

MEMO_ENTRIES = 16
_MEMO = register("front_end", "analysis.cfg_memo", BoundedMemo(lambda: MEMO_ENTRIES))


def _shape(block: Block) -> tuple:
    items = block.items
    if Block not in set(map(type, items)):  # the usual flat body: one C-level pass
        return tuple(map(id, items))
    return tuple(_shape(s) if type(s) is Block else id(s) for s in items)


def cfg_of(fn: Function) -> CFG:
    """:func:`~ptxopt.analysis.cfg.build_cfg` of ``fn``, memoised (see module doc)."""
    key = (fn.kind, fn.name, id(fn.params), _shape(fn.body))
    hit = _MEMO.lookup(key)
    if hit is None:
        hit = build_cfg(fn)
        hit.shared = {}  # derived from the shape alone (module doc)
        # the memo keeps the statements (and so their ids) alive through
        # hit.instructions and a snapshot of the body's containers
        _MEMO.remember(key, (hit, fn.body.copy(), fn.params))
    else:
        hit = hit[0]
    return _rebind(hit, fn)


def _rebind(cfg: CFG, fn: Function) -> CFG:
    out = copy.copy(cfg)
    out.function = fn
    return out


def clear_memo() -> None:
    _MEMO.clear()
