#!/usr/bin/env python3
"""Move ptxopt's modules, tests and benchmarks to names and folders that say what they hold.

A re-runnable codemod: run it from the root of a ptxopt checkout (any newer
main, for instance after merging a branch written before the moves) and it
does the mechanical part of the move, nothing else.

Modules (:data:`MOVES`: the loose top-level modules into packages that show
the floors, and :data:`RENAMES`: no two modules share a stem in different
meanings):

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

README.md and ``examples/`` keep their module names: they are what the stubs
keep working (their test and benchmark paths are rewritten). The codemod is idempotent (a second run changes nothing) and
reads nothing of a file but its imports, dotted module names, paths and
hand-listed file tuples (``FRONT_SOURCES = ("ir.py", ...)``); imports under
``except ImportError:`` (fallbacks to the old paths) are left as written. Files moved here that locate data through
``__file__`` are listed at the end: their paths need a hand edit.

Tests (:data:`TEST_FOLDERS`): each ``tests/test_x.py`` moves to the folder of
the package it tests; ``tests/test_x.py`` paths, ``tests.test_x`` modules,
``Path(__file__)`` roots and data paths (``golden/``, ``adversarial/``,
``data/`` stay in tests/) and ``sys.path`` entries of scripts that import a
test's helpers are rewritten. A test no folder names stays in tests/ (pytest
collects it as before); add its stem to a folder and re-run to move it.

Benchmarks (:data:`BENCH_FOLDERS`): each script moves to ``speed/``,
``reports/`` or ``studies/``, with the same rewrites (``outside_kernels/``,
``results/`` and ``mutation_reviewed.json`` stay in benchmarks/; records in
``benchmarks/results/`` are left as written).

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

#: modules renamed in place for what they hold (old dotted -> new dotted, under ptxopt)
RENAMES: dict[str, str] = {
    "equivalence.prove.memory": "equivalence.prove.memory_versions",   # memory as versioned state of a proof
    "interp.memory": "interp.device_memory",                           # buffers at fake device addresses
    "equivalence.prove.loops": "equivalence.prove.loop_paths",         # proving unrolled loops path by path
    "measure.loops": "measure.measured_trips",                         # trip counts the interpreter measured
    "executor.base": "executor.interface",                             # the one executor interface
    "measure.base": "measure.backend",                                 # the Backend protocol and its types
    "measure.registry": "measure.backend_registry",                    # --backend NAME -> backend
    "sim.tensor": "sim.tensor_work",                                   # tensor-core work of one SASS instruction
    "sim.decode": "sim.sass_decode",                                   # SASS pre-decoded for the issue model
    "interp.state": "interp.cta_state",                                # one CTA's run-time state
    "interp.launch": "interp.launcher",                                # run_kernel: memory set-up, the CTA loop
    "interp.probe": "interp.snippets",                                 # small kernels from instruction snippets
    "interp.ops.common": "interp.ops.op_helpers",                      # helpers of the opcode tables
    "gpu.result": "gpu.measurement",                                   # GpuMeasurement
    "gpu.instrument": "gpu.clock_instrument",                          # %clock64 instrumentation
    "gpu.inputs": "gpu.harness_args",                                  # the harness's arguments, built as the verifier's
    "triton.ptxas": "triton.triton_ptxas",                             # the ptxas binary and flags Triton runs
    "triton.contract": "triton.contract_from_triton",                  # launch contracts from Triton's metadata
    "equivalence.contract": "equivalence.launch_contract",             # launches from contract files and options
    "analysis.latency": "analysis.rough_latency",                      # order-of-magnitude latencies (features)
    "toolchain.control": "toolchain.control_bits",                     # SASS scheduling (control) bits
    # one meaning of "front end" (the parser, passes and analyses: support.digests.FRONT_SOURCES); the
    # evaluation's first half is the candidate's preparation
    "evaluate.frontend": "evaluate.prepare",
    # the strategies' meter, not a second ``measure`` beside the measure/ package
    "search.measure": "search.meter",
}

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
    # the evaluation's on-disk stores sit together, so the executor imports neither evaluate nor search:
    # the driver's/worker's cache rows in transit, and the move memo beside the cache
    "executor.journal": "evaluate.journal",
    "search.move_memo": "evaluate.move_memo",
    # names that explain themselves: no two modules share a stem in different meanings (``errors``, a
    # package's exception types, and ``__init__``/``__main__`` keep theirs: one meaning each)
    **RENAMES,
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
SKIP_FILES = {"README.md", "tests/test_import_contract.py", "tests/project/test_import_contract.py",
              "tools/package_codemod.py", "tests/project/test_package_codemod.py"}
#: files whose old names and paths are fixtures (the codemod's own test): never rewritten
FIXTURES = {"tools/package_codemod.py", "tests/project/test_package_codemod.py"}


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


#: the repository the codemod runs on (set by :func:`main`)
REPO: list[Path] = []


def package_names(package: str) -> set[str]:
    """Names a package's ``__init__`` binds to something other than its submodule of that name: ``from
    ptxopt.sim import decode`` is the function :mod:`ptxopt.sim` re-exports, not the module ``sim/decode.py``
    (``__all__``, lazy tables ``_LAZY = {"name": ...}``, and names imported from elsewhere)."""
    if not REPO or not package.startswith(PKG):
        return set()
    init = REPO[0].joinpath(*package.split(".")) / "__init__.py"
    try:
        tree = ast.parse(init.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, UnicodeDecodeError):
        return set()
    out: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and not (node.level == 0 and node.module == package) \
                and not (node.level == 1 and node.module is None):
            out |= {a.asname or a.name for a in node.names}
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            out.add(node.name)
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            name = node.targets[0].id
            if name == "__all__" or "LAZY" in name:
                try:
                    value = ast.literal_eval(node.value)
                except ValueError:
                    continue
                out |= {v for v in value if isinstance(v, str)}
    return out


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
        if sub in MODMAP and not (target == PKG and alias.name in PUBLIC) and alias.name not in package_names(target):
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


#: a memo's label in :func:`ptxopt.support.bounded_memo.register` (``register("front_end", "analysis.dag", ...)``):
#: the owner's dotted module without the package prefix
MEMO_LABEL = re.compile(r"(\bregister\(\s*[\"']\w+[\"'],\s*[\"'])(" + "|".join(map(re.escape, sorted(MOVES, key=len, reverse=True)))
                        + r")(?=[.\"'])")


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
    text = MEMO_LABEL.sub(lambda m: m.group(1) + MOVES[m.group(2)], text)
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


def _relative_mod_refs(text: str, package: str) -> str:
    """``:mod:`.base``` in a docstring of ``package``: the sibling's new name when it moved within the package."""
    leaves = {old.rpartition(".")[2]: new.rpartition(".")[2] for old, new in MODMAP.items()
              if old.rpartition(".")[0] == package and new.rpartition(".")[0] == package}
    if not leaves:
        return text
    pat = re.compile(r"(:(?:mod|func|class|data|meth):`~?\.)(" + "|".join(map(re.escape, leaves)) + r")(?=[`.])")
    return pat.sub(lambda m: m.group(1) + leaves[m.group(2)], text)


def rewrite_python(text: str, module: str, is_pkg: bool, old_module: str | None) -> str:
    try:
        tree = ast.parse(text)
    except SyntaxError as e:
        print(f"warning: {module}: not parsed ({e}); only dotted names rewritten")
        return rewrite_text(text)
    keep = _fallback_lines(tree)
    text = _relative_mod_refs(text, module if is_pkg else module.rpartition(".")[0])
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


def rewrite_each(files, rewrite, dry: bool) -> list[Path]:
    """``rewrite(path, text)`` on each file; write the ones it changed (unless ``dry``); -> those."""
    changed = []
    for p in files:
        text = p.read_text(encoding="utf-8")
        new = rewrite(p, text)
        if new != text:
            changed.append(p)
            if not dry:
                p.write_text(new, encoding="utf-8")
    return changed


def do_rewrites(repo: Path, moved: dict[Path, str], dry: bool) -> list[Path]:
    def rewrite(p: Path, text: str) -> str:
        if p.suffix == ".py":
            mod, is_pkg = module_of(repo, p)
            return rewrite_python(text, mod, is_pkg, moved.get(p))
        return rewrite_text(text)

    return rewrite_each([p for p in tracked_files(repo) if not is_stub(p)], rewrite, dry)


# -- benchmarks: speed, reports, studies ---------------------------------------------------------

BENCH = "benchmarks"
#: benchmarks/ by purpose: ``speed`` (how fast, what it costs), ``reports`` (the numbers a session re-runs and
#: records: corpus-wide tables, identity and audit comparisons, fuzzing and mutation campaigns) and ``studies``
#: (one question, asked once, and the tools that fed it)
BENCH_FOLDERS: dict[str, tuple[str, ...]] = {
    "speed": ("action_mask", "bounded_cost", "eval_speed", "executor_scaling", "frontend_speed", "grpo_epoch",
              "interp_speed", "pass_guard_cost", "pass_speed", "precision_cost", "search_speed", "sim_cost", "matrix_reference_runs",
              "unroll_proof_cost", "walker_cost"),
    "reports": ("corpus_report", "coverage_report", "floors_sweep", "footprint_sources", "fuzz_loop_shapes",
                "fuzz_passes", "fuzz_pipelined_loads", "fuzz_trust", "gpu_measure_corpus", "import_graph",
                "loop_trips_report", "loop_version_report", "greedy_identity", "pass_declarations", "mutation_campaign", "objective_report", "pass_identity",
                "pass_matrix", "prove_matrix", "rl_report", "search_report", "sim_agreement", "sim_calibration",
                "sim_report", "sim_roofline", "state_census", "swp_ld_report", "throughput_audit",
                "throughput_audit_compare", "triton_hook", "unroll_corpus_report", "verdict_compare"),
    "studies": ("inflight_actions", "loop_actions_report", "min_improvement_noise", "nc_verdicts", "ranker_report",
                "record_trajectories", "sim_trip_source", "smt_solvers", "train_ranker", "unroll_estimates",
                "unroll_shapes_proof", "unroll_sim_scan", "unroll_verdicts"),
}
#: script stem -> its folder
BENCH_MOVES = {stem: folder for folder, stems in BENCH_FOLDERS.items() for stem in stems}
#: what stays at benchmarks/ (data the scripts and tests share)
BENCH_DATA = ("outside_kernels", "results", "mutation_reviewed.json")

_BENCH_NAMES = "|".join(map(re.escape, sorted(BENCH_MOVES, key=len, reverse=True)))
#: ``benchmarks/x.py`` in any text (a command line, a docstring, a Markdown link)
BENCH_PATH = re.compile(r"(?<![\w/.])" + BENCH + r"/(" + _BENCH_NAMES + r")\.py\b")
#: ``ROOT / "benchmarks" / "x.py"`` in code
BENCH_PARTS = re.compile(r"""(["']""" + BENCH + r"""["']\s*/\s*)(["'])(""" + _BENCH_NAMES + r""")\.py\2""")
#: in a script one folder deeper: ``Path(__file__).resolve().parent.parent`` was the repository's root
OLD_ROOT = re.compile(r"(Path\(__file__\)\.resolve\(\))\.parent\.parent\b")
#: ... and ``Path(__file__)[.resolve()].parent / "outside_kernels"`` the benchmarks folder
OLD_HERE_DATA = re.compile(r"(Path\(__file__\)(?:\.resolve\(\))?)\.parent(\s*/\s*[\"'](?:"
                           + "|".join(map(re.escape, BENCH_DATA)) + r")[\"'])")
#: ... and ``ROOT / "benchmarks"`` on ``sys.path`` the folder of its sibling scripts
OLD_BENCH_SYSPATH = re.compile(r"sys\.path\.insert\(0, str\(ROOT / [\"']" + BENCH + r"[\"']\)\)")


def rewrite_bench_refs(text: str) -> str:
    text = BENCH_PATH.sub(lambda m: f"{BENCH}/{BENCH_MOVES[m.group(1)]}/{m.group(1)}.py", text)
    return BENCH_PARTS.sub(lambda m: f"{m.group(1)}{m.group(2)}{BENCH_MOVES[m.group(3)]}{m.group(2)} / "
                                     f"{m.group(2)}{m.group(3)}.py{m.group(2)}", text)


def rewrite_bench_script(text: str, moved_now: bool) -> str:
    """A script in benchmarks/<folder>/: its root and data paths one level further up."""
    text = OLD_ROOT.sub(r"\1.parents[2]", text)
    text = OLD_HERE_DATA.sub(r"\1.parents[1]\2", text)
    text = OLD_BENCH_SYSPATH.sub("sys.path.insert(0, str(Path(__file__).resolve().parent))", text)
    if moved_now:  # ``parents[1]`` was the root only while the script sat in benchmarks/ itself
        text = re.sub(r"(Path\(__file__\)\.resolve\(\))\.parents\[1\](?!\s*/\s*[\"'](?:"
                      + "|".join(map(re.escape, BENCH_DATA)) + r")[\"'])", r"\1.parents[2]", text)
    return text


def move_into_folders(repo: Path, base: str, moves: dict[str, str], left_glob: str, left_note: str,
                      dry: bool) -> set[Path]:
    """Move each ``base/<stem>.py`` that ``moves`` names into ``base/<folder>/``; -> the files moved now.
    Files matching ``left_glob`` still in ``base/`` afterwards are named after ``left_note``."""
    moved: set[Path] = set()
    for stem, folder in moves.items():
        old_p, new_p = repo / base / f"{stem}.py", repo / base / folder / f"{stem}.py"
        if not old_p.exists():
            continue
        if new_p.exists():
            sys.exit(f"error: both {old_p.relative_to(repo)} and {new_p.relative_to(repo)} exist "
                     "(merge them by hand, then re-run)")
        print(f"git mv {old_p.relative_to(repo)} {new_p.relative_to(repo)}")
        if not dry:
            new_p.parent.mkdir(parents=True, exist_ok=True)
            git(repo, "mv", str(old_p.relative_to(repo)), str(new_p.relative_to(repo)))
        moved.add(new_p)
    left = sorted(p.name for p in (repo / base).glob(left_glob)) if (repo / base).is_dir() else []
    if left:
        print(f"note: {left_note}: {', '.join(left)}")
    return moved


def layout_files(repo: Path) -> list[Path]:
    """The tracked text files the benchmarks/ and tests/ stages read (fixtures left alone)."""
    return [repo / rel for rel in git(repo, "ls-files").splitlines()
            if not (rel.startswith(SKIP_PREFIXES) or rel in FIXTURES)
            and (repo / rel).suffix in TEXT_SUFFIXES and (repo / rel).is_file()]


def do_bench_moves(repo: Path, dry: bool) -> set[Path]:
    """Move each benchmark script still at benchmarks/ into its folder; -> the files moved now."""
    return move_into_folders(repo, BENCH, BENCH_MOVES, "*.py",
                             f"benchmark scripts with no folder in BENCH_FOLDERS (left at {BENCH}/)", dry)


def do_bench_rewrites(repo: Path, moved: set[Path], dry: bool) -> list[Path]:
    def rewrite(p: Path, text: str) -> str:
        new = rewrite_bench_refs(text)
        parts = p.relative_to(repo).parts
        if p.suffix == ".py" and len(parts) == 3 and parts[0] == BENCH and parts[1] in BENCH_FOLDERS:
            new = rewrite_bench_script(new, p in moved)
        return new

    return rewrite_each([p for p in layout_files(repo) if not (p in moved and dry)], rewrite, dry)


# -- tests/: one folder per package ------------------------------------------------------------

TESTS = "tests"
#: tests/ mirrors the packages: a test sits in the folder of what it tests (``project``: the repository as a
#: whole -- the import contract, the docs, install, old module paths). A test file named nowhere here stays
#: in tests/ itself, which pytest collects as before; shared data (golden/, adversarial/, data/) and helpers
#: (conftest.py, cli_helpers.py, corpus_tiers.py) stay in tests/.
TEST_FOLDERS: dict[str, tuple[str, ...]] = {
    "project": ("import_contract", "install_docs", "install_wheel", "old_module_paths", "startup_imports",
                "state_census", "readme_examples"),
    "api": ("api", "optimize_overlap", "input_limits", "library_host_state"),
    "plugins": ("plugins", "plugin_passes", "misbehaving_plugins"),
    "ptx": ("body_parser", "grammar", "identity_memo", "isa_facts", "layout", "operand_facts", "operand_facts_fast",
            "print_compare", "roundtrip_corpus", "roundtrip_hypothesis", "parse_errors", "frontend_stress"),
    "support": ("bounded_memo", "fork_safety", "outputs"),
    "kernels": ("corpus", "corpus_report", "artefacts"),
    "toolchain": ("foreign_arch", "ptxas_memo", "tool_faults", "toolchain", "toolchain_arch"),
    "analysis": ("analysis", "analysis_manager", "cfg_dominators", "depgraph", "footprint_alternatives", "global_footprint",
                 "loop_facts_defuse", "loops", "regdeps", "unroll_footprint", "shared_read_footprint"),
    "passes": ("apply_manifest", "golden", "pass_framework", "pass_launch_bounds", "pass_matrix", "pass_names_stable",
               "pass_params", "pass_prefetch", "pass_register_budget", "pass_reorder", "pass_vectorize",
               "passmanager_instruments", "passmanager_verify_each", "pass_declarations", "unroll", "unroll_runtime", "loop_version",
               "nc_ld", "pipelined_loads", "vectorize_chains"),
    "interp": ("interp_control", "interp_corpus", "interp_fp", "interp_memory", "interp_ops", "interp_reference", "interp_missing_lanes",
               "bounded_runs"),
    "equivalence": ("adversarial", "assumption_cap", "contract", "equivalence", "equivalence_budget",
                    "float_precision", "loop_sim", "nc_reads", "prove", "prove_corpus", "prove_hints", "prove_loops",
                    "prove_memo", "prove_observables", "prove_wiring", "verify_reference_key", "read_footprint", "smt", "smt_recheck",
                    "verify", "verify_changes", "verify_trust"),
    "measure": ("measure", "roofline", "same_code", "sass_store", "cubin_memo", "loop_slice"),
    "sim": ("sim", "sim_coalescing", "sim_conservation", "sim_guarded_loop", "sim_inflight", "sim_loop_guard",
            "sim_occupancy", "sim_regbank", "sim_split_access", "sim_steady", "sim_tensor", "sim_throughput",
            "sim_war", "estimate_floors", "floors"),
    "gpu": ("gpu_device", "gpu_harness", "gpu_instrument", "gpu_isolation", "gpu_measure_corpus"),
    "executor": ("executor", "ray_executor"),
    "evaluate": ("cache_damage", "eval_prefix", "evaluate", "evaluate_disasm", "evaluate_durability",
                 "evaluate_observable", "input_isolation", "evaluation_session", "move_memo", "objective", "perf_block_from_ptx"),
    "search": ("search_cli", "search_guided", "search_launch", "search_lockstep", "search_progress", "search_state",
               "search_strategies", "search_trust", "loop_actions_report", "ranker_recall"),
    "triton": ("triton_hook", "triton_tune", "tune_toolchain"),
    "testing": ("fuzz_passes", "fuzz_trust", "mutant_reviews", "mutation", "loop_mutant_reviews", "loop_shapes",
                "loop_version_fuzz"),
    "cli": ("cli", "cli_conventions", "cli_edges", "cli_explain", "cli_footprint", "cli_run", "emit_staging",
            "output_rule", "worker_signals"),
    "rl": ("rl_cli", "rl_env", "rl_learning", "rl_remote", "rl_soft_labels", "rl_widen"),
}
#: test module (``test_x``) -> its folder
TEST_MOVES = {f"test_{stem}": folder for folder, stems in TEST_FOLDERS.items() for stem in stems}
#: what stays in tests/ and a moved test reaches one level further up
TEST_DATA = ("golden", "adversarial", "data", "cli_helpers.py", "corpus_tiers.py", "conftest.py")

_TEST_NAMES = "|".join(map(re.escape, sorted(TEST_MOVES, key=len, reverse=True)))
TEST_PATH = re.compile(r"(?<![\w/.])" + TESTS + r"/(" + _TEST_NAMES + r")\.py\b")
TEST_PARTS = re.compile(r"""(["']""" + TESTS + r"""["']\s*/\s*)(["'])(""" + _TEST_NAMES + r""")\.py\2""")
OLD_TESTS_DATA = re.compile(r"(Path\(__file__\)(?:\.resolve\(\))?)\.parent(\s*/\s*[\"'](?:"
                            + "|".join(map(re.escape, TEST_DATA)) + r")[\"'])")


#: ``from tests.test_sim import ins`` (the repository's root on ``sys.path``): a namespace package per folder
TEST_DOTTED = re.compile(r"(?<![\w.])" + TESTS + r"\.(" + _TEST_NAMES + r")\b")


def rewrite_test_refs(text: str) -> str:
    text = TEST_DOTTED.sub(lambda m: f"{TESTS}.{TEST_MOVES[m.group(1)]}.{m.group(1)}", text)
    text = TEST_PATH.sub(lambda m: f"{TESTS}/{TEST_MOVES[m.group(1)]}/{m.group(1)}.py", text)
    return TEST_PARTS.sub(lambda m: f"{m.group(1)}{m.group(2)}{TEST_MOVES[m.group(3)]}{m.group(2)} / "
                                    f"{m.group(2)}{m.group(3)}.py{m.group(2)}", text)


def rewrite_test_file(text: str, moved_now: bool) -> str:
    """A test in tests/<folder>/: the repository's root and tests/'s data one level further up."""
    if moved_now:  # while the test sat in tests/ itself, ``parents[1]`` was the root and ``parent`` tests/
        text = re.sub(r"(Path\(__file__\)(?:\.resolve\(\))?)\.parents\[1\]", r"\1.parents[2]", text)
    text = OLD_ROOT.sub(r"\1.parents[2]", text)
    text = OLD_TESTS_DATA.sub(r"\1.parents[1]\2", text)
    if moved_now:
        text = re.sub(r"(Path\(__file__\)(?:\.resolve\(\))?)\.parent(?![\w.])", r"\1.parents[1]", text)
    return text


def fix_syspath(text: str, folder_name: str, moves: dict[str, str]) -> str:
    """``sys.path.insert(0, str(X / "benchmarks"))`` before ``from sim_calibration import ...``: the folder the
    imported scripts now sit in goes first (left, with a note, when they sit in several)."""
    names = set(re.findall(r"^\s*(?:from|import)\s+(\w+)", text, flags=re.M)) & set(moves)
    if not names:
        return text
    folders = {moves[n] for n in names}
    pat = re.compile(r"sys\.path\.insert\(0, str\((.*?/\s*[\"']" + folder_name + r"[\"'])\)\)")
    if not pat.search(text):
        return text
    if len(folders) > 1:
        print(f"warning: imports {sorted(names)} from several {folder_name}/ folders: sys.path left as it is")
        return text
    (folder,) = folders  # the scripts' folder first, the folder itself still there (its helpers: corpus_tiers)
    return pat.sub(lambda m: f'sys.path[:0] = [str({m.group(1)} / "{folder}"), str({m.group(1)})]', text)


def do_test_moves(repo: Path, dry: bool) -> set[Path]:
    return move_into_folders(repo, TESTS, TEST_MOVES, "test_*.py",
                             f"tests with no folder in TEST_FOLDERS (left in {TESTS}/, collected as before)", dry)


def do_test_rewrites(repo: Path, moved: set[Path], dry: bool) -> list[Path]:
    def rewrite(p: Path, text: str) -> str:
        new = rewrite_test_refs(text)
        parts = p.relative_to(repo).parts
        if p.suffix == ".py":
            if len(parts) == 3 and parts[0] == TESTS and parts[1] in TEST_FOLDERS:
                new = rewrite_test_file(new, p in moved)
            else:  # a script outside tests/ that imports a test's helpers
                new = fix_syspath(new, TESTS, TEST_MOVES)
            new = fix_syspath(new, BENCH, BENCH_MOVES)
        return new

    return rewrite_each(layout_files(repo), rewrite, dry)


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
    REPO[:] = [repo]
    moved = do_moves(repo, args.dry_run)
    changed = do_rewrites(repo, moved, args.dry_run)
    stubs = do_stubs(repo, args.dry_run)
    print(f"moved {len(moved)} modules, rewrote {len(changed)} files, wrote {len(stubs)} stubs: {', '.join(stubs)}")
    bench_moved = do_bench_moves(repo, args.dry_run)
    bench_changed = do_bench_rewrites(repo, bench_moved, args.dry_run)
    print(f"moved {len(bench_moved)} benchmark scripts, rewrote {len(bench_changed)} files")
    test_moved = do_test_moves(repo, args.dry_run)
    test_changed = do_test_rewrites(repo, test_moved, args.dry_run)
    print(f"moved {len(test_moved)} test files, rewrote {len(test_changed)} files")
    hand = [p for p in moved if "__file__" in p.read_text(encoding="utf-8")] if not args.dry_run else []
    if hand:
        print("locate data through __file__ (check their paths by hand): "
              + ", ".join(str(p.relative_to(repo)) for p in sorted(hand)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
