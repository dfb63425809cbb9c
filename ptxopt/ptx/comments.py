"""Putting comments back into the IR after parsing.

The grammar ignores comments (they may appear between any two tokens), so the
lexer hands them over separately with their positions. Each comment is placed
in the innermost ``{ }`` block that encloses it, before the first statement
that starts after it; a comment that starts on the same line as the statement
before it is marked ``trailing`` so the printer keeps it on that line.
Comments before ``.version`` become the module's header comments; a comment
inside a statement (rare: between operands or parameters) moves to just after
that statement. The placement is a function of the printed layout, so
``parse(emit(m)) == m`` holds with comments too.
"""

from __future__ import annotations

from ptxopt.ptx.ir import Block, Comment, Function, Module

Pos = tuple[int, int]


def place_comments(module: Module, header_pos: Pos, comments, pos: dict[int, Pos], spans) -> None:
    spans = sorted(spans, key=lambda s: s[0])
    header: list[Comment] = []
    groups: dict[int, tuple[list, list]] = {}
    stack: list = []
    nxt = 0
    for tok in comments:
        p = (tok.line, tok.column)
        c = Comment(tok.value.rstrip(), False, tok.line)
        if p < header_pos:
            header.append(c)
            continue
        while nxt < len(spans) and spans[nxt][0] < p:
            while stack and stack[-1][1] < spans[nxt][0]:
                stack.pop()
            stack.append(spans[nxt])
            nxt += 1
        while stack and stack[-1][1] < p:
            stack.pop()
        container = stack[-1][2] if stack else module.items
        groups.setdefault(id(container), (container, []))[1].append((p, c))
    module.header_comments = tuple(header)
    for container, cs in groups.values():
        _merge(container, cs, pos)


def _merge(items: list, cs: list[tuple[Pos, Comment]], pos: dict[int, Pos]) -> None:
    merged: list = []
    ci = 0
    prev_line = None
    for item in items:
        ip = pos.get(id(item), (0, 0))
        while ci < len(cs) and cs[ci][0] < ip:
            prev_line = _append(merged, cs[ci], prev_line)
            ci += 1
        merged.append(item)
        compound = type(item) in (Block, Function)
        prev_line = None if compound else ip[0]
    while ci < len(cs):
        prev_line = _append(merged, cs[ci], prev_line)
        ci += 1
    items[:] = merged


def _append(merged: list, pc: tuple[Pos, Comment], prev_line: int | None) -> int | None:
    (line, _), c = pc
    if prev_line is not None and line == prev_line:
        c = Comment(c.text, True, c.line)
    merged.append(c)
    # A comment that ends on the line it starts on may be followed by another
    # trailing comment on the same line; a multi-line block comment may not.
    return line if "\n" not in c.text else None
