"""Does a rewritten module print as the module it was made from? -- mostly without printing it.

The action mask keeps a pass only when it changes the printed module
(:mod:`ptxopt.search.state`); printing every candidate to find out would be
~25 prints of a 5,000-line kernel per state, most of them for children that
are never visited. A pass's output shares every statement it did not
rewrite with its input (statements are immutable; :meth:`ptxopt.ptx.ir.Module.copy`
copies only containers), so walking both modules side by side settles the
question where the texts would first differ:

* the same statement object, or statements that print the same line, print
  the same -- walk on;
* at the first statement whose line differs, both being one-line statements
  (instruction, label, declaration, ``.loc``) not followed by a trailing
  comment (which would join that line), the texts differ at that line --
  everything before it printed the same lines;
* a function head (linkage, parameters, ``.maxnreg`` ...) is compared by its
  printed lines (:func:`ptxopt.ptx.emit.function_head`), the same way.

Anything else (statements inserted at a block's end, a ``Raw`` block, a
trailing comment at the difference, different module headers) is not
decided here: :func:`prints_same` returns None and the caller prints.
``tests/ptx/test_print_compare.py`` checks every decision against
``emit(a) == emit(b)``.
"""

from __future__ import annotations

from ptxopt.ptx.emit import _decl, format_instruction, function_head
from ptxopt.ptx.ir import Block, Comment, Decl, Function, Instruction, Label, Module

def prints_same(a: Module, b: Module) -> bool | None:
    """``emit(a) == emit(b)`` when the two modules' statements decide it, else None."""
    if (a.version, a.target, a.address_size, a.header_comments) != \
            (b.version, b.target, b.address_size, b.header_comments) or len(a.items) != len(b.items):
        return None
    for x, y in zip(a.items, b.items):
        if x is y:
            continue
        if type(x) is Function and type(y) is Function:
            verdict = _function(x, y)
            if verdict is not True:
                return verdict  # differs here (everything before printed the same), or undecided
        elif type(x) is not type(y) or x != y:  # module-level declarations, comments, raw text
            return None
    return True


def _function(x: Function, y: Function) -> bool | None:
    if (x.kind, x.name, x.linkage, x.params, x.ret_params, x.directives, x.attribute) != \
            (y.kind, y.name, y.linkage, y.params, y.ret_params, y.directives, y.attribute):
        # the head's lines and the one after it (the body's ``{``, or ``;``)
        hx = function_head(x) + ["{" if x.body is not None else ";"]
        hy = function_head(y) + ["{" if y.body is not None else ";"]
        if hx != hy:
            k = next((k for k, (u, v) in enumerate(zip(hx, hy)) if u != v), None)
            if k is None or "\n" in hx[k] or "\n" in hy[k]:
                return None  # one is a prefix of the other: not decided here
            return False
    if x.body is None or y.body is None:
        return True if x.body is None and y.body is None else None
    return _block(x.body, y.body)


def _line(s) -> str:
    """The line ``s`` prints, less the indentation it shares with every
    statement of its block (a label prints none: ``\x00`` stands for it)."""
    t = type(s)
    if t is Instruction:
        return format_instruction(s)
    if t is Label:
        return "\x00" + s.name + ":"
    if t is Decl:
        return _decl(s)
    return s.text  # Loc, Raw, a comment on its own line


def _block(a: Block, b: Block) -> bool | None:
    ia, ib = a.items, b.items
    for k in range(min(len(ia), len(ib))):
        s, t = ia[k], ib[k]
        if s is t:
            continue
        ts, tt = type(s), type(t)
        if ts is Block or tt is Block:
            if ts is not tt:
                return None
            verdict = _block(s, t)
            if verdict is not True:
                return verdict
            continue
        if (ts is Comment and s.trailing) or (tt is Comment and t.trailing):
            if ts is tt and s.text == t.text and s.trailing == t.trailing:
                continue
            return None  # it joins the line before: not decided here
        ls, lt = _line(s), _line(t)
        if ls == lt:
            continue
        if "\n" in ls or "\n" in lt or _joins(ia, k + 1) or _joins(ib, k + 1):
            return None
        return False  # the first line that differs: every line before it printed the same
    return True if len(ia) == len(ib) else None


def _joins(items: list, k: int) -> bool:
    """A trailing comment at ``items[k]`` prints on the line before it."""
    return k < len(items) and type(items[k]) is Comment and items[k].trailing


__all__ = ["prints_same"]
