#!/usr/bin/env python3
"""Move ptxopt's loose top-level modules into packages that show the floors.

A re-runnable codemod: run it from the root of a ptxopt checkout (any newer
main) and it does the mechanical part of the move, nothing else:

1. ``git mv`` each module of :data:`MOVES` (and each folder of :data:`DIRS`)
   to its new package, creating the package's ``__init__.py`` when missing;
2. rewrites every reference to a moved module in the tracked text files:
   ``from ptxopt import x`` (split when only some names moved), ``import
   ptxopt.x``, ``from ptxopt.x import y``, relative imports (a moved file's
   relative imports become absolute), imports inside functions, dotted
   strings (``mock.patch`` targets, lazy tables, entry points), file paths
   (``ptxopt/x.py``) and the hand-listed ``*_SOURCES`` tuples of
   ``digests`` (``"x.py"`` -> ``"pkg/x.py"``);
3. writes a thin re-export stub at each old path the README or
   ``examples/`` name (the stub puts the moved module itself in
   ``sys.modules``, so ``import ptxopt.x`` is the very same module object).

README.md and ``examples/`` are left as they are: they are what the stubs
keep working. The codemod is idempotent (a second run changes nothing) and
reads nothing of a file but its imports, dotted module names, paths and
hand-listed file tuples (``FRONT_SOURCES = ("ir.py", ...)``); imports under
``except ImportError:`` (fallbacks to the old paths) are left as written. Files moved here that locate data through
``__file__`` are listed at the end: their paths need a hand edit.

Usage::

    python tools/package_codemod.py [--dry-run] [REPO]      # default REPO: the current directory
"""

from __future__ import annotations

import argparse
import ast
import re
import subprocess
import sys
from pathlib import Path

PKG = "ptxopt"

#: old dotted module -> new dotted module (both under ptxopt).
MOVES: dict[str, str] = {
    # the PTX language: grammar, words, IR, parser, printer, layout, operand facts, opcodes
    **{s: f"ptx.{s}" for s in ("ptxwords", "parser", "body_parser", "comments", "constexpr", "ir", "emit",
                               "layout", "print_compare", "opcodes", "operand_facts", "identity_memo")},
    # process plumbing
    **{s: f"support.{s}" for s in ("forksafe", "gc_pause", "workers", "jsontext", "outputs", "host_state",
                                   "cancel", "pass_output", "digests")},
    # where kernels come from: the corpus manifest and the command line's targets
    "corpus": "kernels.corpus",
    "inputs": "kernels.inputs",
    # running passes
    "passmanager": "passes.passmanager",
    "pipeline": "passes.pipeline",
    # parse -> print -> ptxas: needs the toolchain, so it lives there
    "roundtrip": "toolchain.roundtrip",
    # clears memos of analysis, evaluate and search: the lowest floor above all of them
    "memos": "search.memos",
    # the evaluation's on-disk stores sit together, so the executor imports neither evaluate nor search:
    # the driver's/worker's cache rows in transit, and the move memo beside the cache
    "executor.journal": "evaluate.journal",
    "search.move_memo": "evaluate.move_memo",
}

#: old folder (relative to ptxopt/) -> new folder (data, not packages).
DIRS: dict[str, str] = {"grammar": "ptx/grammar"}

#: docstrings of the packages the codemod creates.
PACKAGE_DOCS = {
    "ptx": "The PTX language: grammar, words, the frozen IR, parser, printer, layout, opcodes and operand facts.\n\n"
           "The lowest floor that knows PTX: it imports only :mod:`ptxopt.support` and :mod:`ptxopt.kernels`.",
    "support": "Process plumbing: forks, workers, the GC pause, atomic outputs, host state, cancellation,\n"
               "captured pass output, JSON text and code digests.\n\n"
               "Knows nothing of PTX; every other package may import it.",
    "kernels": "Where kernels come from: the corpus manifest and the command line's targets (files, folders,\n"
               "``corpus:SELECTOR``), with :class:`~ptxopt.kernels.inputs.InputError` for the user's mistakes.\n\n"
               "The bottom floor: it imports nothing of ptxopt.",
}

STUB_MARK = "# re-export stub written by the package codemod"
TEXT_SUFFIXES = {".py", ".cfg", ".toml", ".ini", ".md", ".txt", ".sh"}
SKIP_PREFIXES = ("examples/", "benchmarks/results/")
#: README.md: what the stubs keep working; the import contract: its synthetic trees are fixtures, not references
SKIP_FILES = {"README.md", "tests/test_import_contract.py", "tools/package_codemod.py"}


def full(stem: str) -> str:
    return f"{PKG}.{stem}"


#: old dotted module -> new dotted module
MODMAP = {full(s): full(n) for s, n in MOVES.items()}


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout


def is_stub(path: Path) -> bool:
    try:
        return STUB_MARK in path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False


# -- 1. moves ------------------------------------------------------------------------------------

def ensure_package(repo: Path, rel_pkg: str, dry: bool) -> None:
    init = repo / PKG / rel_pkg / "__init__.py"
    if init.exists():
        return
    doc = PACKAGE_DOCS.get(rel_pkg, f"The {rel_pkg} package.")
    print(f"create {init.relative_to(repo)}")
    if not dry:
        init.parent.mkdir(parents=True, exist_ok=True)
        init.write_text(f'"""{doc}\n"""\n', encoding="utf-8")
        git(repo, "add", str(init.relative_to(repo)))


def do_moves(repo: Path, dry: bool) -> dict[Path, str]:
    """Move what is still at its old place; -> {new file: its old dotted module} for files moved now."""
    moved: dict[Path, str] = {}
    for stem, new in MOVES.items():
        old_p = repo / PKG / (stem.replace(".", "/") + ".py")
        new_p = repo / PKG / (new.replace(".", "/") + ".py")
        if not old_p.exists() or is_stub(old_p):
            if not new_p.exists():
                print(f"note: {PKG}.{stem} is in neither place (skipped)")
            continue
        if new_p.exists():
            sys.exit(f"error: both {old_p.relative_to(repo)} and {new_p.relative_to(repo)} exist "
                     "(merge them by hand, then re-run)")
        ensure_package(repo, new.rpartition(".")[0].replace(".", "/"), dry)
        print(f"git mv {old_p.relative_to(repo)} {new_p.relative_to(repo)}")
        if not dry:
            git(repo, "mv", str(old_p.relative_to(repo)), str(new_p.relative_to(repo)))
        moved[new_p] = full(stem)
    for old, new in DIRS.items():
        old_d, new_d = repo / PKG / old, repo / PKG / new
        if not old_d.is_dir():
            continue
        if new_d.exists():
            left = [p for p in old_d.rglob("*") if p.is_file()]
            if left:
                sys.exit(f"error: both {old_d.relative_to(repo)} and {new_d.relative_to(repo)} hold files")
            continue
        print(f"git mv {old_d.relative_to(repo)} {new_d.relative_to(repo)}")
        if not dry:
            new_d.parent.mkdir(parents=True, exist_ok=True)
            git(repo, "mv", str(old_d.relative_to(repo)), str(new_d.relative_to(repo)))
    return moved


# -- 2. rewriting references ---------------------------------------------------------------------

def map_module(mod: str) -> str:
    """A dotted module (or module.attr) with a moved module's prefix replaced."""
    for old, new in MODMAP.items():
        if mod == old or mod.startswith(old + "."):
            return new + mod[len(old):]
    return mod


def module_of(repo: Path, path: Path) -> tuple[str, bool]:
    rel = path.relative_to(repo).with_suffix("")
    parts = list(rel.parts)
    is_pkg = parts[-1] == "__init__"
    if is_pkg:
        parts = parts[:-1]
    return ".".join(parts), is_pkg


def resolve(module: str, is_package: bool, level: int, name: str | None) -> str:
    if level == 0:
        return name or ""
    base = module.split(".")
    if not is_package:
        base = base[:-1]
    if level > 1:
        base = base[: len(base) - (level - 1)]
    return ".".join(base + ([name] if name else []))


def _fmt_from(indent: str, target: str, names: list[str], width: int = 120) -> str:
    line = f"{indent}from {target} import {', '.join(names)}"
    if len(line) <= width:
        return line
    head = f"{indent}from {target} import ("
    out, cur = [], head
    for i, n in enumerate(names):
        piece = n + (", " if i < len(names) - 1 else ")")
        if len(cur) + len(piece.rstrip()) > width and cur.strip() not in ("", head.strip()):
            out.append(cur.rstrip())
            cur = " " * len(head) + piece
        else:
            cur += piece
    out.append(cur)
    return "\n".join(out)


#: names in ``ptxopt/__init__.py``'s ``__all__``: ``from ptxopt import emit`` is the public function, not the
#: submodule of that name (filled by :func:`main`)
PUBLIC: set[str] = set()


def public_names(repo: Path) -> set[str]:
    init = repo / PKG / "__init__.py"
    for node in ast.walk(ast.parse(init.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            try:
                return set(ast.literal_eval(node.value))
            except ValueError:
                return set()
    return set()


def rewrite_from(node: ast.ImportFrom, module: str, is_pkg: bool, old_module: str | None) -> list[str] | None:
    """The statements replacing ``node`` (without indentation), or None to keep it."""
    here = old_module or module
    target = resolve(here, is_pkg, node.level, node.module)
    moved_file_rel = node.level > 0 and old_module is not None
    groups: dict[str, list[str]] = {}
    changed = moved_file_rel
    for alias in node.names:
        if alias.name == "*":
            groups.setdefault(map_module(target), []).append("*")
            changed |= map_module(target) != target
            continue
        sub = f"{target}.{alias.name}"
        if sub in MODMAP and not (target == PKG and alias.name in PUBLIC):
            new_parent, _, new_stem = MODMAP[sub].rpartition(".")
            local = alias.asname or alias.name
            groups.setdefault(new_parent, []).append(new_stem if new_stem == local else f"{new_stem} as {local}")
            changed = True
        else:
            nt = map_module(target)
            changed |= nt != target
            groups.setdefault(nt, []).append(alias.name if not alias.asname else f"{alias.name} as {alias.asname}")
    if not changed:
        return None
    if node.level > 0 and not moved_file_rel:
        # a file that stays: keep untouched groups relative, moved targets absolute
        pass
    return [(t, ns) for t, ns in groups.items()]  # type: ignore[return-value]


DOTTED = re.compile(r"(?<![\w.])" + re.escape(PKG) + r"\.(" + "|".join(map(re.escape, sorted(MOVES, key=len, reverse=True)))
                    + r")(?![\w(])")  # not ``ptxopt.emit(...)``: the public function of that name
PATHS = re.compile(r"(?<![\w/])" + re.escape(PKG) + r"/(" + "|".join(re.escape(m.replace(".", "/")) for m in sorted(MOVES, key=len, reverse=True))
                   + r")\.py(?![\w])")
DIRPATHS = re.compile(r"(?<![\w/])" + re.escape(PKG) + r"/(" + "|".join(DIRS) + r")(?![\w.])")


FROM_PKG = re.compile(r"\bfrom " + re.escape(PKG) + r" import ([\w]+(?:, [\w]+)*)")


def _from_pkg_in_text(m: re.Match) -> str:
    """``from ptxopt import a, b`` in a string (code a test runs in a subprocess): moved when every name moved
    to one package, else left (and reported)."""
    names = m.group(1).split(", ")
    news = {MOVES[n].rpartition(".")[0] for n in names if n in MOVES and n not in PUBLIC}
    if not news:
        return m.group(0)
    if len(news) == 1 and all(n in MOVES and n not in PUBLIC for n in names) \
            and all(MOVES[n].rpartition(".")[2] == n for n in names):
        return f"from {PKG}.{news.pop()} import {m.group(1)}"
    print(f"warning: left as it is (names moved to several places): {m.group(0)}")
    return m.group(0)


def rewrite_text(text: str, from_pkg: bool = True) -> str:
    if from_pkg:
        text = FROM_PKG.sub(_from_pkg_in_text, text)
    text = DOTTED.sub(lambda m: f"{PKG}.{MOVES[m.group(1)]}", text)
    text = PATHS.sub(lambda m: f"{PKG}/{MOVES[m.group(1).replace('/', '.')].replace('.', '/')}.py", text)
    text = DIRPATHS.sub(lambda m: f"{PKG}/{DIRS[m.group(1)]}", text)
    return text


def _sources_literals(tree: ast.AST) -> list[ast.Constant]:
    """String elements of tuples, lists and sets assigned to an ALL_CAPS name (hand-listed files such as
    ``digests.FRONT_SOURCES`` or a test's ``NOT_RESULTS``: ``"x.py"`` relative to ``ptxopt/``)."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id.isupper() for t in targets) and node.value:
                out += [c for coll in ast.walk(node.value) if isinstance(coll, (ast.Tuple, ast.List, ast.Set))
                        for c in coll.elts if isinstance(c, ast.Constant) and isinstance(c.value, str)]
    return out


def _source_entry(value: str) -> str | None:
    if value.endswith(".py") and value[:-3].replace("/", ".") in MOVES:
        return MOVES[value[:-3].replace("/", ".")].replace(".", "/") + ".py"
    if value in DIRS:
        return DIRS[value]
    return None


def _fallback_lines(tree: ast.AST) -> set[int]:
    """Lines of ``except ImportError:`` bodies: a fallback to the old paths on purpose (a benchmark that runs
    in a tree from before the move), left as written."""
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ExceptHandler) and node.type is not None:
            names = {n.id for n in ast.walk(node.type) if isinstance(n, ast.Name)}
            if names & {"ImportError", "ModuleNotFoundError"}:
                for stmt in node.body:
                    out.update(range(stmt.lineno, stmt.end_lineno + 1))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and "ImportError" in node.value:
            try:  # code in a string (a child process's script): its fallbacks too
                inner = ast.parse(node.value)
            except SyntaxError:
                continue
            out.update(node.lineno - 1 + i for i in _fallback_lines(inner))
    return out


def rewrite_python(text: str, module: str, is_pkg: bool, old_module: str | None) -> str:
    try:
        tree = ast.parse(text)
    except SyntaxError as e:
        print(f"warning: {module}: not parsed ({e}); only dotted names rewritten")
        return rewrite_text(text)
    keep = _fallback_lines(tree)
    import_lines = {i for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)
                    for i in range(n.lineno, n.end_lineno + 1)}
    # 1. dotted names and paths, line by line (the line count stays: the tree's line numbers hold)
    lines = text.splitlines(keepends=True)
    lines = [ln if i in keep else rewrite_text(ln, from_pkg=i not in import_lines)
             for i, ln in enumerate(lines, start=1)]
    text = "".join(lines)
    tree = ast.parse(text)
    # 2. ``from`` imports and hand-listed source files, from the tree
    edits: list[tuple[int, int, int, int, str]] = []  # (line0, col0, line1, col1, new)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.lineno not in keep:
            groups = rewrite_from(node, module, is_pkg, old_module)
            if groups is None:
                continue
            first = lines[node.lineno - 1]
            prefix = first[: node.col_offset]
            indent = prefix if prefix.strip() == "" else re.match(r"\s*", first).group(0)
            stmts = [_fmt_from(indent, t, ns) for t, ns in groups]
            if prefix.strip():  # ``try: from x import y`` on one line: keep it one line
                new = "; ".join(s.strip() for s in stmts)
            else:
                new = "\n".join(stmts)[len(indent):]
            edits.append((node.lineno - 1, node.col_offset, node.end_lineno - 1, node.end_col_offset, new))
        for c in _sources_literals(node) if isinstance(node, ast.Module) else []:
            new = _source_entry(c.value)
            if new is not None and c.lineno not in keep:
                seg = lines[c.lineno - 1][c.col_offset:c.end_col_offset]
                q = seg[0] if seg and seg[0] in "'\"" else '"'
                edits.append((c.lineno - 1, c.col_offset, c.end_lineno - 1, c.end_col_offset, f"{q}{new}{q}"))
    # apply from the end (col offsets are in UTF-8 bytes)
    for l0, c0, l1, c1, new in sorted(edits, reverse=True):
        b0, b1 = lines[l0].encode(), lines[l1].encode()
        head, tail = b0[:c0].decode(), b1[c1:].decode()
        lines[l0:l1 + 1] = [head + new + tail]
    return "".join(lines)


def tracked_files(repo: Path) -> list[Path]:
    out = []
    for rel in git(repo, "ls-files").splitlines():
        if rel in SKIP_FILES or rel.startswith(SKIP_PREFIXES):
            continue
        p = repo / rel
        if p.suffix in TEXT_SUFFIXES and p.is_file():
            out.append(p)
    return out


def do_rewrites(repo: Path, moved: dict[Path, str], dry: bool) -> list[Path]:
    changed = []
    for p in tracked_files(repo):
        if is_stub(p):
            continue
        text = p.read_text(encoding="utf-8")
        if p.suffix == ".py":
            mod, is_pkg = module_of(repo, p)
            new = rewrite_python(text, mod, is_pkg, moved.get(p))
        else:
            new = rewrite_text(text)
        if new != text:
            changed.append(p)
            if not dry:
                p.write_text(new, encoding="utf-8")
    return changed


# -- 3. stubs ------------------------------------------------------------------------------------

def named_in_docs(repo: Path) -> set[str]:
    """Stems of moved modules that README.md or examples/ name (dotted, ``from ptxopt import``, path)."""
    texts = []
    for rel in git(repo, "ls-files", "README.md", "examples").splitlines():
        try:
            texts.append((repo / rel).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError):
            continue
    text = "\n".join(texts)
    found = set(DOTTED.findall(text)) | {p.replace("/", ".") for p in PATHS.findall(text)}
    for m in re.finditer(r"from\s+" + PKG + r"((?:\.\w+)*)\s+import\s+\(?([\w\s,]+)\)?", text):
        base = m.group(1)[1:]
        found |= {(base + "." if base else "") + n.strip().split(" as ")[0] for n in m.group(2).split(",")} & set(MOVES)
    return found


def stub_text(stem: str) -> str:
    new = full(MOVES[stem])
    parent, _, leaf = new.rpartition(".")
    return (f'"""``{full(stem)}`` is :mod:`{new}`: the old name stays importable (the README and examples use it)."""\n\n'
            f"{STUB_MARK} (tools/package_codemod.py): the same module object\n"
            "import sys\n\n"
            f"from {parent} import {leaf} as _moved\n\n"
            "sys.modules[__name__] = _moved\n")


def do_stubs(repo: Path, dry: bool) -> list[str]:
    written = []
    for stem in sorted(named_in_docs(repo)):
        p = repo / PKG / (stem.replace(".", "/") + ".py")
        if p.exists() and not is_stub(p):
            continue  # not moved (yet)
        text = stub_text(stem)
        if p.exists() and p.read_text(encoding="utf-8") == text:
            continue
        written.append(stem)
        if not dry:
            p.write_text(text, encoding="utf-8")
            git(repo, "add", str(p.relative_to(repo)))
    return written


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("repo", nargs="?", type=Path, default=Path.cwd())
    ap.add_argument("--dry-run", action="store_true")
    args = ap.parse_args(argv)
    repo = args.repo.resolve()
    if not (repo / PKG / "__init__.py").exists():
        print(f"error: {repo}: no {PKG}/ package here", file=sys.stderr)
        return 2
    PUBLIC.update(public_names(repo))
    moved = do_moves(repo, args.dry_run)
    changed = do_rewrites(repo, moved, args.dry_run)
    stubs = do_stubs(repo, args.dry_run)
    print(f"moved {len(moved)} modules, rewrote {len(changed)} files, wrote {len(stubs)} stubs: {', '.join(stubs)}")
    hand = [p for p in moved if "__file__" in p.read_text(encoding="utf-8")] if not args.dry_run else []
    if hand:
        print("locate data through __file__ (check their paths by hand): "
              + ", ".join(str(p.relative_to(repo)) for p in sorted(hand)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
