"""Basic blocks and the control-flow graph of one function.

Why it looks like this:

* **Flattened, with a way back.** PTX bodies may contain nested ``{ }``
  scopes (call sequences, inline asm). Control flow ignores them, so the
  analyses see the instructions in textual order, numbered ``0..n-1`` (the
  *instruction id*, ``iid``). ``CFG.sites[iid]`` is the path of item indices
  from ``function.body`` down to the instruction (``(7,)`` is
  ``body.items[7]``, ``(9, 2)`` is ``body.items[9].items[2]``) so a pass can
  rewrite in place with :func:`get_at` / :func:`set_at`.
* **Leaders** are the first statement, every label (consecutive labels
  start one block together), and the statement after any terminator
  (``bra``, ``brx``, ``ret``, ``exit``, ``trap``), guarded or not. ``call``
  does not end a block: control returns to the next instruction.
* **Successors** of a block ending in ``bra L`` (``bra.uni`` too) are
  ``[block(L)]``; a guarded branch adds the fall-through block. ``brx.idx``
  goes to the labels of its ``.branchtargets`` list, or to every labelled
  block when the list cannot be found (conservative). ``ret``/``exit``/
  ``trap`` have none unless guarded (then: the fall-through). Taken targets
  come first, then the fall-through; duplicates are dropped. A branch to an
  unknown label (a bug in the input) contributes no edge.
* **Shadowed registers.** A ``.reg`` declared inside a nested scope that
  reuses a name visible outside is a different register; analyses see it
  renamed to ``name@scope`` (see :attr:`CFG.du`) so liveness does not
  confuse the two. Non-shadowing scoped registers keep their names.
* The graph is a :class:`networkx.DiGraph` over block indices (node attribute
  ``block``), so the usual graph algorithms apply; ``BasicBlock.succs`` and
  ``preds`` are the same edges as lists of indices.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from types import MappingProxyType

from ptxopt.ptx import opcodes, operand_facts
from ptxopt.ptx.ir import Block, Decl, Function, Instruction, Label

Path = tuple[int, ...]


def dominates(idom: dict[int, int], a: int, b: int) -> bool:
    """Does block ``a`` dominate block ``b``, given the immediate dominators
    (:meth:`CFG.dominators`)? Walks ``b``'s dominator chain up to the entry."""
    while True:
        if a == b:
            return True
        p = idom.get(b)
        if p is None or p == b:
            return False
        b = p


@dataclass(eq=False)
class BasicBlock:
    """A maximal straight-line run of instructions.

    ``label`` is the first label naming the block (``labels`` all of them),
    ``start`` the iid of its first instruction; the instructions are
    ``iids = range(start, start + len(instructions))``.
    """

    index: int
    label: str | None
    instructions: list[Instruction]
    succs: list[int] = field(default_factory=list)
    preds: list[int] = field(default_factory=list)
    labels: tuple[str, ...] = ()
    start: int = 0

    def __setattr__(self, name: str, value) -> None:
        if self.__dict__.get("_frozen"):
            raise AttributeError(f"a frozen BasicBlock is read-only (cannot set {name})")
        object.__setattr__(self, name, value)

    def freeze(self) -> None:
        """Make the lists tuples and refuse assignment (:meth:`CFG.freeze`)."""
        self.instructions = tuple(self.instructions)
        self.succs = tuple(self.succs)
        self.preds = tuple(self.preds)
        self.__dict__["_frozen"] = True

    @property
    def iids(self) -> range:
        return range(self.start, self.start + len(self.instructions))

    @property
    def terminator(self) -> Instruction | None:
        """The last instruction if it is a terminator (``bra``, ``ret``...)."""
        if self.instructions and self.instructions[-1].opcode in opcodes.TERMINATORS:
            return self.instructions[-1]
        return None

    def __repr__(self) -> str:
        return (f"BasicBlock({self.index}, label={self.label!r}, n={len(self.instructions)}, "
                f"succs={self.succs}, preds={self.preds})")


# ---------------------------------------------------------------------------
# Register declarations
# ---------------------------------------------------------------------------


class RegTypes:
    """Declared type of every register name (``%r<10>`` declares ``%r0..%r9``).

    Lookup splits the trailing digits so that a ``%r<100000>`` declaration
    costs nothing; names nobody declared get ``None``.
    """

    def __init__(self) -> None:
        self.exact: dict[str, str] = {}
        self.ranges: dict[str, tuple[str, int]] = {}

    def add(self, decl: Decl, scope: "_Scope | None" = None) -> None:
        """Record a ``.reg`` declaration; names that ``scope`` shadows are
        recorded under their renamed form (``name@sid``)."""
        t = decl.dtype
        t = t[1:] if t else "b32"
        for it in decl.items:
            shadow = scope is not None and (it.name in scope.exact or it.name in scope.prefixes)
            key = f"{it.name}@{scope.sid}" if shadow else it.name
            if it.count is not None:
                self.ranges[key] = (t, it.count)
            else:
                self.exact[key] = t

    def get(self, name: str) -> str | None:
        t = self.exact.get(name)
        if t is not None:
            return t
        base, at, sid = name.partition("@")
        p, d = _split_digits(base)
        if d:
            r = self.ranges.get(p + at + sid)
            if r is not None:
                return r[0]
        return None

    def declares(self, name: str) -> bool:
        return self.get(name) is not None


def _split_digits(name: str) -> tuple[str, str]:
    i = len(name)
    while i > 0 and name[i - 1].isdigit():
        i -= 1
    return name[:i], name[i:]


# ---------------------------------------------------------------------------
# Per-instruction definitions and uses
# ---------------------------------------------------------------------------


def instr_defs_uses(ins: Instruction, rename=None) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Registers written and read by ``ins`` (:func:`ptxopt.ptx.operand_facts.defs_uses`),
    each name once, optionally renamed (scoped ``.reg`` shadowing)."""
    f = operand_facts.facts(ins)
    d, u = f.defs, f.uses  # already each name once
    if rename is not None:
        d = tuple(rename(r) for r in d)
        u = tuple(rename(r) for r in u)
    return d, u


# ---------------------------------------------------------------------------
# Flattening
# ---------------------------------------------------------------------------


def get_at(body: Block, path: Path):
    """The statement at ``path`` (see module doc)."""
    node = body
    for i in path[:-1]:
        node = node.items[i]
    return node.items[path[-1]]


def set_at(body: Block, path: Path, stmt) -> None:
    """Replace the statement at ``path`` in place."""
    node = body
    for i in path[:-1]:
        node = node.items[i]
    node.items[path[-1]] = stmt


class _Scope:
    """Registers a nested scope declares that shadow outer ones."""

    def __init__(self, sid: int) -> None:
        self.sid = sid
        self.exact: set[str] = set()
        self.prefixes: dict[str, int] = {}

    def maps(self, name: str) -> bool:
        if name in self.exact:
            return True
        p, d = _split_digits(name)
        return bool(d) and p in self.prefixes and int(d) < self.prefixes[p]


_TOP_PATHS: list[Path] = []
_TOP_PATHS_MAX = 1 << 17  # larger bodies build their own


def _top_paths(n: int) -> list[Path]:
    """``[(0,), (1,), ...]``, at least ``n`` of them: the paths of a body's
    own statements, the same tuples for every CFG (a path per instruction
    was thousands of tuples to allocate and for the collector to visit)."""
    if len(_TOP_PATHS) < n:
        _TOP_PATHS.extend((i,) for i in range(len(_TOP_PATHS), n))
    return _TOP_PATHS


def _flatten(fn: Function):
    """Walk the body: statements in textual order with paths, declared
    register types, and per-instruction rename functions for shadowed
    registers."""
    stmts: list[tuple[object, Path, object]] = []  # (stmt, path, rename or None)
    types = RegTypes()
    scopes: list[_Scope] = []
    counter = [0]

    def make_rename(active: tuple[_Scope, ...]):
        def rename(name: str) -> str:
            for s in reversed(active):
                if s.maps(name):
                    return f"{name}@{s.sid}"
            return name
        return rename

    def walk(block: Block, prefix: Path, depth: int, rename) -> None:
        if depth > 0:
            counter[0] += 1
            scope = _Scope(counter[0])
            for item in block.items:
                if type(item) is Decl and item.space == ".reg":
                    for it in item.items:
                        if types.declares(it.name if it.count is None else it.name + "0"):
                            if it.count is None:
                                scope.exact.add(it.name)
                            else:
                                scope.prefixes[it.name] = it.count
            if scope.exact or scope.prefixes:
                scopes.append(scope)
                rename = make_rename(tuple(scopes))
        else:
            scope = None
        top = _top_paths(len(block.items)) if not prefix and len(block.items) <= _TOP_PATHS_MAX else None
        for i, item in enumerate(block.items):
            t = type(item)
            if t is Block:
                walk(item, prefix + (i,), depth + 1, rename)  # noqa: F821 (bound until the del below)
            elif t is Decl:
                if item.space == ".reg":
                    types.add(item, scope)
                stmts.append((item, top[i] if top else prefix + (i,), rename))
            elif t is Instruction or t is Label:
                stmts.append((item, top[i] if top else prefix + (i,), rename))
        if scope is not None and scopes and scopes[-1] is scope:
            scopes.pop()

    if fn.body is not None:
        walk(fn.body, (), 0, None)
    del walk  # walk refers to itself through its closure: a cycle that would keep stmts for the collector
    return stmts, types


# ---------------------------------------------------------------------------
# The CFG
# ---------------------------------------------------------------------------


class CFG:
    """Basic blocks of one function and the graph between them.

    Attributes: ``function``; ``blocks`` (list of :class:`BasicBlock`, block
    0 is the entry); ``graph`` (``networkx.DiGraph`` over block indices);
    ``instructions``/``sites``/``block_of`` indexed by iid; ``du`` the
    ``(defs, uses)`` register tuples per iid (scope renaming applied);
    ``label_block`` label name -> block index; ``reg_types``
    (:class:`RegTypes`).
    """

    def __init__(self, fn: Function) -> None:
        self.function = fn
        stmts, self.reg_types = _flatten(fn)
        self.instructions: list[Instruction] = []
        self.sites: list[Path] = []
        self.du: list[tuple[tuple[str, ...], tuple[str, ...]]] = []
        self.blocks: list[BasicBlock] = []
        self.label_block: dict[str, int] = {}
        self._branchtargets: dict[str, tuple[str, ...]] = {}

        cur: BasicBlock | None = None
        prev_label: str | None = None
        # per-instruction work below: lists and functions bound once
        instructions, sites, du = self.instructions, self.sites, self.du
        facts, terminators = operand_facts.facts, opcodes.TERMINATORS
        for stmt, path, rename in stmts:
            t = type(stmt)
            if t is Decl:
                if stmt.attrs and stmt.attrs[0] == ".branchtargets" and prev_label is not None:
                    self._branchtargets[prev_label] = tuple(i.name for i in stmt.items)
                prev_label = None
                continue
            if t is Label:
                prev_label = stmt.name
                if cur is not None and not cur.instructions and cur.labels:
                    # consecutive labels name the same block
                    cur.labels += (stmt.name,)
                    self.label_block[stmt.name] = cur.index
                    continue
                cur = self._new_block((stmt.name,))
                self.label_block[stmt.name] = cur.index
                continue
            prev_label = None
            # an instruction
            if cur is None:
                cur = self._new_block(())
            instructions.append(stmt)
            sites.append(path)
            if rename is None:  # instr_defs_uses inline (one call less per instruction)
                f = stmt._facts or facts(stmt)
                du.append((f.defs, f.uses))
            else:
                du.append(instr_defs_uses(stmt, rename))
            cur.instructions.append(stmt)
            if stmt.opcode in terminators:
                cur = None
        if not self.blocks:
            self._new_block(())
        self.block_of: list[int] = [0] * len(self.instructions)
        for b in self.blocks:
            self.block_of[b.start:b.start + len(b.instructions)] = [b.index] * len(b.instructions)
        self._link()

    def __setattr__(self, name: str, value) -> None:
        if self.__dict__.get("_frozen"):
            raise AttributeError(f"a frozen CFG is read-only (cannot set {name})")
        object.__setattr__(self, name, value)

    def freeze(self) -> CFG:
        """Make this CFG read-only, in place: its lists become tuples, its
        maps ``MappingProxyType``, its blocks frozen, and assigning an
        attribute raises. What :class:`~ptxopt.analysis.manager.AnalysisManager`
        hands out (one CFG is shared by every caller that asks for the same
        function shape); ``shared``, if set, stays a writable dict on purpose.
        Returns ``self``."""
        self.instructions = tuple(self.instructions)
        self.sites = tuple(self.sites)
        self.du = tuple(self.du)
        self.block_of = tuple(self.block_of)
        self.label_block = MappingProxyType(self.label_block)
        self._branchtargets = MappingProxyType(self._branchtargets)
        for b in self.blocks:
            b.freeze()
        self.blocks = tuple(self.blocks)
        rt = self.reg_types
        rt.exact, rt.ranges = MappingProxyType(rt.exact), MappingProxyType(rt.ranges)
        self.__dict__["_frozen"] = True
        return self

    def _new_block(self, labels: tuple[str, ...]) -> BasicBlock:
        b = BasicBlock(len(self.blocks), labels[0] if labels else None, [], labels=labels,
                       start=len(self.instructions))
        self.blocks.append(b)
        return b

    def branch_targets(self, ins: Instruction) -> list[str] | None:
        """Label names a branch may go to; None when unresolvable (``brx``
        whose table is unknown)."""
        labels = operand_facts.facts(ins).labels
        if ins.opcode == "bra":
            return [labels[0]] if labels else None
        if ins.opcode == "brx":
            for name in labels:
                if name in self._branchtargets:
                    return list(self._branchtargets[name])
            return None
        return []

    def _link(self) -> None:
        n = len(self.blocks)
        all_labelled = [b.index for b in self.blocks if b.labels]
        for b in self.blocks:
            succs: list[int] = []
            last = b.instructions[-1] if b.instructions else None
            falls = True
            if last is not None and last.opcode in opcodes.TERMINATORS:
                if last.opcode in ("bra", "brx"):
                    targets = self.branch_targets(last)
                    if targets is None:
                        succs.extend(all_labelled)
                    else:
                        succs.extend(self.label_block[t] for t in targets if t in self.label_block)
                falls = last.guard is not None
            if falls and b.index + 1 < n:
                succs.append(b.index + 1)
            b.succs = list(dict.fromkeys(succs))
        for b in self.blocks:
            for s in b.succs:
                self.blocks[s].preds.append(b.index)

    @cached_property
    def graph(self):
        """The blocks as a ``networkx.DiGraph`` (node attribute ``block``),
        built on first use: the passes walk ``succs``/``preds`` and never need
        it, and networkx alone takes ~0.15 s to import."""
        import networkx as nx

        g = nx.DiGraph()
        for b in self.blocks:
            g.add_node(b.index, block=b)
        for b in self.blocks:
            for s in b.succs:
                g.add_edge(b.index, s)
        return nx.freeze(g) if self.__dict__.get("_frozen") else g

    # -- queries -----------------------------------------------------------

    @property
    def entry(self) -> int:
        return 0

    def block(self, label_or_index) -> BasicBlock:
        if isinstance(label_or_index, int):
            return self.blocks[label_or_index]
        return self.blocks[self.label_block[label_or_index]]

    def reverse_postorder(self) -> list[int]:
        """Blocks in reverse postorder of a DFS from the entry (successors in
        list order), then unreachable blocks in index order: deterministic."""
        seen = [False] * len(self.blocks)
        post: list[int] = []
        for root in [0] + list(range(len(self.blocks))):
            if seen[root]:
                continue
            seen[root] = True
            stack = [(root, iter(self.blocks[root].succs))]
            while stack:
                node, it = stack[-1]
                for s in it:
                    if not seen[s]:
                        seen[s] = True
                        stack.append((s, iter(self.blocks[s].succs)))
                        break
                else:
                    stack.pop()
                    post.append(node)
        return post[::-1]

    @cached_property
    def back_edges(self) -> list[tuple[int, int]]:
        """Retreating edges of a DFS from the entry (then from unreachable
        blocks): an edge to a block still on the DFS stack. Non-empty exactly
        when the CFG has a cycle."""
        state = [0] * len(self.blocks)  # 0 new, 1 on stack, 2 done
        out: list[tuple[int, int]] = []
        for root in [0] + list(range(len(self.blocks))):
            if state[root]:
                continue
            state[root] = 1
            stack = [(root, iter(self.blocks[root].succs))]
            while stack:
                node, it = stack[-1]
                for s in it:
                    if state[s] == 1:
                        out.append((node, s))
                    elif state[s] == 0:
                        state[s] = 1
                        stack.append((s, iter(self.blocks[s].succs)))
                        break
                else:
                    stack.pop()
                    state[node] = 2
        return tuple(out) if self.__dict__.get("_frozen") else out

    @property
    def has_loop(self) -> bool:
        return bool(self.back_edges)

    def dominators(self) -> dict[int, int]:
        """Immediate dominators of the blocks reachable from the entry, the
        entry itself left out (as networkx >= 3.5's ``immediate_dominators``
        gives them, which this replaced: a self-loop on the entry block is
        therefore not a natural loop, the conservative reading), by Cooper,
        Harvey and Kennedy's iteration over reverse postorder -- networkx's
        algorithm, without its ~0.15 s import."""
        order: list[int] = []  # postorder of the blocks reachable from 0
        seen = {0}
        stack = [(0, iter(self.blocks[0].succs))]
        while stack:
            node, it = stack[-1]
            for s in it:
                if s not in seen:
                    seen.add(s)
                    stack.append((s, iter(self.blocks[s].succs)))
                    break
            else:
                stack.pop()
                order.append(node)
        rank = {b: i for i, b in enumerate(order)}
        idom = {0: 0}
        changed = True
        while changed:
            changed = False
            for b in reversed(order[:-1]):  # reverse postorder without the entry
                new = None
                for p in self.blocks[b].preds:
                    if p not in idom:
                        continue
                    if new is None:
                        new = p
                        continue
                    x, y = p, new
                    while x != y:
                        while rank[x] < rank[y]:
                            x = idom[x]
                        while rank[y] < rank[x]:
                            y = idom[y]
                    new = x
                if idom.get(b) != new:
                    idom[b] = new
                    changed = True
        del idom[0]
        return idom

    def natural_loops(self) -> list[tuple[int, frozenset[int]]]:
        """``(header, body blocks)`` for each back edge whose target dominates
        its source (reducible loops), in back-edge order."""
        idom = self.dominators()

        loops = []
        for tail, head in self.back_edges:
            if tail not in idom or not dominates(idom, head, tail):
                continue
            body = {head, tail}
            work = [tail]
            while work:
                x = work.pop()
                if x == head:
                    continue
                for p in self.blocks[x].preds:
                    if p not in body:
                        body.add(p)
                        work.append(p)
            loops.append((head, frozenset(body)))
        return loops


def build_cfg(fn: Function) -> CFG:
    """The :class:`CFG` of a function with a body."""
    return CFG(fn)
