"""Count the process-wide state of ``ptxopt`` by reading its source (no import).

Prints figures that compare across branches (run it on each checkout):

* module-level mutable globals: top-level assignments of a dict, list, set,
  ``OrderedDict``, ``defaultdict``, ``deque``, weak container (literal,
  comprehension or constructor call), and module-level memo objects (a call of
  a class whose name ends in ``Memo``, ``LRU`` or ``Cache``, or wrapped in
  ``register(...)``); split into state (a memo object, or a container the
  module's own code mutates: item assignment or deletion, a mutating method,
  ``global``) and tables (never mutated in the module: constant lookups);
* ``functools`` caches: module-level functions decorated ``lru_cache`` / ``cache``;
* hand-written LRUs: ``popitem(last=False)`` outside :mod:`ptxopt.support.bounded_memo`;
* places that clear state: module-level ``def clear*`` functions, and
  ``.clear()`` / ``.cache_clear()`` calls on a module-level global of the same
  file or on another module's attribute (``module._NAME.clear()``); the
  latter with a private name are "private-name reaches";
* registered memos: ``register(group, ...)`` calls of :mod:`ptxopt.support.bounded_memo`;
* session slots: module-level ``Slot(...)`` declarations of :mod:`ptxopt.support.session_state` (a memo
  each evaluation session owns; not module state), and their clearing (``_X.get().clear()``) counts
  among the places that clear state.

Usage: ``python benchmarks/reports/state_census.py [ROOT]`` (ROOT: a checkout, default
this one); ``--by-file`` lists the LRUs and reaches per file.
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections import Counter
from pathlib import Path

CONTAINERS = {"dict", "list", "set", "OrderedDict", "defaultdict", "deque", "WeakSet", "WeakValueDictionary",
              "WeakKeyDictionary", "Counter", "bytearray"}
MEMO_SUFFIXES = ("Memo", "LRU", "Cache")
LITERALS = (ast.Dict, ast.List, ast.Set, ast.DictComp, ast.ListComp, ast.SetComp)
MUTATORS = {"append", "extend", "add", "update", "setdefault", "pop", "popitem", "clear", "insert", "remove",
            "discard", "move_to_end", "appendleft", "popleft", "remember", "cache_clear"}


def _callee(node: ast.AST) -> str | None:
    if isinstance(node, ast.Call):
        f = node.func
        return f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None
    return None


def _kind(value: ast.AST) -> str | None:
    """'container', 'memo' or None for the value of a top-level assignment."""
    if isinstance(value, LITERALS):
        return "container"
    name = _callee(value)
    if name == "register" and value.args:
        return "memo"
    if name in CONTAINERS:
        return "container"
    if name and name.endswith(MEMO_SUFFIXES):
        return "memo"
    return None


def _targets(stmt: ast.stmt) -> list[str]:
    ts = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
    return [t.id for t in ts if isinstance(t, ast.Name)]


def _mutated(tree: ast.Module, names: set[str]) -> set[str]:
    """The names of ``names`` the module's code changes in place."""
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Global):
            out.update(n for n in node.names if n in names)
        elif isinstance(node, ast.Subscript) and isinstance(node.ctx, (ast.Store, ast.Del)):
            if isinstance(node.value, ast.Name) and node.value.id in names:
                out.add(node.value.id)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in MUTATORS:
            if isinstance(node.func.value, ast.Name) and node.func.value.id in names:
                out.add(node.func.value.id)
    return out


def census_file(path: Path, rel: str, out: dict) -> None:
    src = path.read_text(encoding="utf-8")
    tree = ast.parse(src, str(path))
    globals_: dict[str, str] = {}
    slots: set[str] = set()
    for stmt in tree.body:
        if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None:
            if _callee(stmt.value) == "Slot":
                slots.update(_targets(stmt))
                out["slots"] += len(_targets(stmt))
                continue
            kind = _kind(stmt.value)
            for name in _targets(stmt):
                if kind is not None and not name.startswith("__"):
                    globals_[name] = kind
        elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if stmt.name.startswith("clear"):
                out["clear_defs"] += 1
            for d in stmt.decorator_list:
                d = d.func if isinstance(d, ast.Call) else d
                dn = d.id if isinstance(d, ast.Name) else d.attr if isinstance(d, ast.Attribute) else ""
                if dn in ("lru_cache", "cache"):
                    out["lru_cache"] += 1
    mutated = _mutated(tree, set(globals_))
    for name, kind in globals_.items():
        state = kind == "memo" or name in mutated
        out["globals"][("state" if state else "table", kind)] += 1
    is_helper = rel.endswith("support/bounded_memo.py")
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            if isinstance(node, ast.Call) and _callee(node) == "register" and len(node.args) >= 3:
                out["registered"] += 1
            continue
        attr, recv = node.func.attr, node.func.value
        if attr == "popitem" and not is_helper and any(
                k.arg == "last" and isinstance(k.value, ast.Constant) and k.value.value is False
                for k in node.keywords):
            out["lrus"] += 1
            out["lru_files"][rel] += 1
        if attr == "register" and len(node.args) >= 3:
            out["registered"] += 1
        if attr in ("clear", "cache_clear") and not node.args:
            if isinstance(recv, ast.Name) and recv.id in globals_:
                out["clear_calls_own"] += 1
            elif (isinstance(recv, ast.Call) and isinstance(recv.func, ast.Attribute) and recv.func.attr == "get"
                  and isinstance(recv.func.value, ast.Name) and recv.func.value.id in slots):
                out["clear_calls_own"] += 1  # the active session's memo of this module's slot
            elif isinstance(recv, ast.Attribute) and isinstance(recv.value, ast.Name) and recv.value.id != "self":
                out["clear_calls_other"] += 1
                if recv.attr.startswith("_"):
                    out["private_reaches"] += 1
                    out["reach_files"][rel] += 1


def census(root: Path, package: str = "ptxopt") -> dict:
    out = {"globals": Counter(), "lru_cache": 0, "lrus": 0, "lru_files": Counter(), "clear_defs": 0,
           "clear_calls_own": 0, "clear_calls_other": 0, "private_reaches": 0, "reach_files": Counter(),
           "registered": 0, "slots": 0, "files": 0}
    for path in sorted((root / package).rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        out["files"] += 1
        census_file(path, rel, out)
    return out


def report(c: dict, by_file: bool) -> str:
    g = c["globals"]
    state = g[("state", "container")] + g[("state", "memo")]
    tables = g[("table", "container")] + g[("table", "memo")]
    clearing = c["clear_defs"] + c["clear_calls_own"] + c["clear_calls_other"]
    lines = [
        f"files                              {c['files']}",
        f"module-level mutable globals       {state + tables}",
        f"  state (mutated in its module)    {state}  (containers {g[('state', 'container')]}, "
        f"memo objects {g[('state', 'memo')]})",
        f"  tables (never mutated there)     {tables}",
        f"functools caches (lru_cache)       {c['lru_cache']}",
        f"hand-written LRUs                  {c['lrus']}  (popitem(last=False) outside support/bounded_memo)",
        f"places that clear state            {clearing}",
        f"  def clear*                       {c['clear_defs']}",
        f"  .clear() on own global or slot   {c['clear_calls_own']}",
        f"  .clear() on another module's     {c['clear_calls_other']}  (private-name reaches {c['private_reaches']})",
        f"registered memos (register(...))   {c['registered']}",
        f"session slots (Slot(...))          {c['slots']}  (memos an evaluation session owns)",
    ]
    if by_file:
        lines += ["", "hand-written LRUs by file:"] + [f"  {n}  {f}" for f, n in sorted(c["lru_files"].items())]
        lines += ["private-name reaches by file:"] + [f"  {n}  {f}" for f, n in sorted(c["reach_files"].items())]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("root", nargs="?", default=str(Path(__file__).resolve().parents[2]))
    ap.add_argument("--by-file", action="store_true")
    a = ap.parse_args(argv)
    root = Path(a.root)
    if not (root / "ptxopt").is_dir():
        print(f"{root}: no ptxopt package here", file=sys.stderr)
        return 2
    print(report(census(root), a.by_file))
    return 0


if __name__ == "__main__":
    sys.exit(main())
