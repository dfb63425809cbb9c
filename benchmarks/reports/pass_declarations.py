"""Where a pass's identity is written: for each built-in pass, the files
under ``ptxopt/`` that declare it (a class whose ``kind`` is its name) or list
it in a table of passes (a literal dict, tuple, list or set naming three or
more different passes by kind or alias: the registry's kind table, the alias
table, the action list).

Each such file is a place to edit, consistently with the others, when a pass
is added or renamed. A list of module names (every element a module stem
under ``ptxopt/passes/``, e.g. ``reorder``) is not a table of passes, and a
use of a name (``make_pass("vec_ld")`` in a test helper) is not a
declaration. The names come from the committed registry snapshot
(``tests/data/pass_registry.json``), so two trees are counted over the same
names. ``tests/`` and golden folders are not counted (a pass has a golden
folder in either design).

Run (from the repository root)::

    python benchmarks/reports/pass_declarations.py               # this checkout
    python benchmarks/reports/pass_declarations.py --rev b0784ad # a commit, read with git

``--json FILE`` also writes the figures. A report: exit 0, or 2 when the
revision cannot be read.
"""

from __future__ import annotations

import argparse
import ast
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SNAPSHOT = ROOT / "tests" / "data" / "pass_registry.json"


def sources(rev: str | None) -> dict[str, str]:
    """``{path: text}`` of every ``ptxopt/**/*.py`` of this checkout or of ``rev``."""
    if rev is None:
        return {str(p.relative_to(ROOT)): p.read_text() for p in sorted((ROOT / "ptxopt").rglob("*.py"))}
    names = subprocess.run(["git", "-C", str(ROOT), "ls-tree", "-r", "--name-only", rev, "ptxopt"],
                           capture_output=True, text=True, check=True).stdout.split()
    return {n: subprocess.run(["git", "-C", str(ROOT), "show", f"{rev}:{n}"], capture_output=True, text=True,
                              check=True).stdout for n in names if n.endswith(".py")}


def declared_kinds(text: str) -> set[str]:
    """The kinds the classes of a module declare (``kind = "x"`` in a class body)."""
    out = set()
    for cls in (n for n in ast.walk(ast.parse(text)) if isinstance(n, ast.ClassDef)):
        for st in cls.body:
            targets = [st.target] if isinstance(st, ast.AnnAssign) else st.targets if isinstance(st, ast.Assign) else []
            target = targets[0] if targets else None
            value = getattr(st, "value", None)
            if isinstance(target, ast.Name) and target.id == "kind" and isinstance(value, ast.Constant):
                out.add(value.value)
    return out


def tabled_kinds(text: str, kind_of: dict[str, str], modules: set[str]) -> tuple[set[str], int]:
    """The kinds named in the module's tables of passes, and how many such tables it has."""
    kinds, count = set(), 0
    for node in ast.walk(ast.parse(text)):
        items = node.keys if isinstance(node, ast.Dict) else node.elts if isinstance(
            node, (ast.Tuple, ast.List, ast.Set)) else []
        strings = [i.value for i in items if isinstance(i, ast.Constant) and isinstance(i.value, str)]
        if strings and all(s in modules for s in strings):
            continue  # a list of modules
        named = {kind_of[s] for s in strings if s in kind_of}
        if len(named) >= 3:
            kinds |= named
            count += 1
    return kinds, count


def figures(rev: str | None) -> dict:
    snap = json.loads(SNAPSHOT.read_text())
    kind_of = {k["kind"]: k["kind"] for k in snap["kinds"]} | {n["name"]: n["kind"] for n in snap["names"]}
    src = sources(rev)
    modules = {Path(p).stem for p in src if p.startswith("ptxopt/passes/")}
    per_kind: dict[str, list[str]] = {k["kind"]: [] for k in snap["kinds"]}
    tables = {}
    for path, text in src.items():
        tabled, n = tabled_kinds(text, kind_of, modules)
        if n:
            tables[path] = n
        for kind in (declared_kinds(text) | tabled) & set(per_kind):
            per_kind[kind].append(path)
    return {"rev": rev or "checkout", "per_kind": per_kind,
            "mean_files_per_pass": round(sum(map(len, per_kind.values())) / len(per_kind), 2),
            "tables": tables}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rev", default=None, help="a commit to read with git (default: this checkout)")
    ap.add_argument("--json", dest="json_out", default=None)
    a = ap.parse_args(argv)
    try:
        f = figures(a.rev)
    except (subprocess.CalledProcessError, SyntaxError) as e:
        print(f"pass_declarations: error: cannot read {a.rev}: {e}", file=sys.stderr)
        return 2
    print(f"tree: {f['rev']}")
    for kind, files in f["per_kind"].items():
        print(f"  {kind:14s} {len(files)} files: {', '.join(files)}")
    print(f"mean files that declare or list a pass: {f['mean_files_per_pass']}")
    print(f"tables of passes: {sum(f['tables'].values())} in {', '.join(f['tables']) or '-'}")
    if a.json_out:
        Path(a.json_out).write_text(json.dumps(f, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
