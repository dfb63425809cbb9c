"""The import contract: explicit layers, checked on the source.

The module graph of ``ptxopt/`` and ``rl/`` is built with :mod:`ast` from every
import statement anywhere in a module -- at the top, inside functions, under
``try``/``if`` -- with relative imports resolved. An edge ``a -> b`` means
module ``a`` has a statement that imports module ``b``:

* ``import a.b.c`` counts ``a.b.c`` (not its parent packages: every import of a
  submodule initialises them, which no contract tool counts);
* ``from pkg import name`` counts ``pkg.name`` when that is a module, and
  ``pkg`` itself when ``name`` is not a module (the statement then reads
  ``pkg/__init__``'s namespace). ``from . import sibling`` therefore counts
  only the sibling, and a submodule that takes a name from its own package's
  ``__init__`` (which usually re-exports the submodule) is a cycle.

The rules:

(a) ``ptxopt`` never imports ``rl``: the learning layer registers itself
    (:mod:`rl.plugin`) instead;
(b) ``torch`` is imported only under ``rl/`` (optional imports included);
(c) no import cycles: every strongly connected component of the graph is a
    single module, except the components in :data:`ALLOWED_CYCLES`;
(d) floors (:data:`LAYERS`): every module of ``ptxopt`` sits on one floor,
    and every import -- at the top, inside functions, under ``try`` -- goes
    to its own floor or one below. For this rule a string literal that names
    a module (a lazy re-export table, ``import_module``, ``python -m``)
    counts as an import too: it is one, deferred to run time. The imports
    that still go up are listed, each with its reason, in
    :data:`BACK_ARROWS`: the list can only shrink (a listed arrow that is
    gone must be removed from it);
(e) reach (:data:`FLOORS`): a few modules reach, through no chain of
    imports, some packages that sit above them -- the pass manager none of
    the instruments that check, compile and measure, ``ptxopt.gpu`` nothing
    of the pass layer or above.

The checker is tested on a small synthetic tree too, so it can fail.
"""

from __future__ import annotations

import ast
from functools import lru_cache
from pathlib import Path

import networkx as nx
import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("ptxopt", "rl")

#: Cycles left on purpose, each with its reason: frozenset of members -> why.
#: Empty: the module graph has no import cycle.
ALLOWED_CYCLES: dict[frozenset[str], str] = {}


@lru_cache(maxsize=None)
def _parsed(path: str, mtime_ns: int, size: int) -> ast.Module:
    return ast.parse(Path(path).read_text(encoding="utf-8"), filename=path)


def parse_file(path: Path) -> ast.Module:
    """The file's syntax tree, parsed once per version of the file (the rules walk every file)."""
    st = path.stat()
    return _parsed(str(path), st.st_mtime_ns, st.st_size)


def module_files(root: Path, packages=PACKAGES) -> dict[str, Path]:
    """Dotted module name -> file, for every ``.py`` file under ``packages``."""
    out: dict[str, Path] = {}
    for pkg in packages:
        for path in sorted((root / pkg).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            out[".".join(parts)] = path
    return out


def _resolve(module: str, is_package: bool, level: int, name: str | None) -> str:
    """The absolute module a (possibly relative) ``from`` import names."""
    if level == 0:
        return name or ""
    base = module.split(".")
    if not is_package:
        base = base[:-1]
    if level > 1:
        base = base[: len(base) - (level - 1)]
    return ".".join(base + ([name] if name else []))


def imports_of(module: str, path: Path, known: set[str]) -> tuple[set[str], set[str]]:
    """(the known modules ``module`` imports, every absolute name it imports).

    The second set holds the raw imported names (``torch``, ``torch.nn``,
    ``numpy``...) so rules about third-party packages can be checked.
    """
    tree = parse_file(path)
    is_package = path.name == "__init__.py"
    deps: set[str] = set()
    raw: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                raw.add(alias.name)
                if alias.name in known:
                    deps.add(alias.name)
                else:  # ``import a.b.attr`` is impossible, but ``import a.b`` of a known a.b
                    head = alias.name
                    while head and head not in known:
                        head = head.rpartition(".")[0]
                    if head:
                        deps.add(head)
        elif isinstance(node, ast.ImportFrom):
            target = _resolve(module, is_package, node.level, node.module)
            raw.add(target)
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                raw.add(sub)
                if sub in known:
                    deps.add(sub)
                elif target in known:
                    deps.add(target)
                else:
                    head = target
                    while head and head not in known:
                        head = head.rpartition(".")[0]
                    if head:
                        deps.add(head)
    deps.discard(module)
    return deps, raw


def import_graph(root: Path, packages=PACKAGES) -> tuple[nx.DiGraph, dict[str, set[str]]]:
    """The module graph of ``packages`` under ``root`` and each module's raw imports."""
    files = module_files(root, packages)
    known = set(files)
    g = nx.DiGraph()
    g.add_nodes_from(known)
    raw_all: dict[str, set[str]] = {}
    for mod, path in files.items():
        deps, raw = imports_of(mod, path, known)
        raw_all[mod] = raw
        for d in deps:
            g.add_edge(mod, d)
    return g, raw_all


def _in(mod: str, pkg: str) -> bool:
    return mod == pkg or mod.startswith(pkg + ".")


def layer_violations(g: nx.DiGraph, lower: str = "ptxopt", upper: str = "rl") -> list[tuple[str, str]]:
    """Edges from the ``lower`` layer into the ``upper`` one."""
    return sorted((a, b) for a, b in g.edges if _in(a, lower) and _in(b, upper))


def torch_violations(raw: dict[str, set[str]], allowed: str = "rl") -> list[tuple[str, str]]:
    """(module, name) for each import of ``torch`` outside the ``allowed`` package."""
    return sorted((m, n) for m, names in raw.items() for n in names
                  if _in(n, "torch") and not _in(m, allowed))


def cycles(g: nx.DiGraph) -> list[frozenset[str]]:
    """The strongly connected components with more than one module."""
    return sorted((frozenset(c) for c in nx.strongly_connected_components(g) if len(c) > 1),
                  key=lambda c: (-len(c), sorted(c)))


def string_imports(root: Path, package: str, packages=PACKAGES) -> list[tuple[str, str]]:
    """(module, named module) for each string literal in a module of ``package``
    that is exactly the name of another known module: an import deferred to run
    time (``_LAZY = {"f": "ptxopt.x"}``, ``import_module(...)``, ``-m ptxopt.x``)."""
    files = module_files(root, packages)
    out = set()
    for mod, path in files.items():
        if not _in(mod, package):
            continue
        for node in ast.walk(parse_file(path)):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value != mod \
                    and node.value in files:
                out.add((mod, node.value))
    return sorted(out)


def floor_violations(g: nx.DiGraph, package: str, roots) -> list[list[str]]:
    """The import chains by which ``package`` reaches the layers above it (the
    modules of the packages ``roots``): for each such module reached first --
    no other one on the way -- the shortest chain from a module of ``package``.
    A module that imports a root is above it too; its chain goes on to the root."""
    own = sorted(m for m in g if _in(m, package))
    top = {m for m in g if any(_in(m, r) for r in roots) and not _in(m, package)}
    parent: dict[str, str | None] = {m: None for m in own}
    frontier, hits = list(own), []
    while frontier:  # breadth first from every module of the package at once; stop at the roots
        nxt = []
        for m in frontier:
            for d in sorted(g.successors(m)):
                if d in parent:
                    continue
                parent[d] = m
                (hits if d in top else nxt).append(d)
        frontier = nxt
    chains = []
    for t in hits:
        chain = [t]
        while parent[chain[-1]] is not None:
            chain.append(parent[chain[-1]])
        chains.append(chain[::-1])
    return sorted(chains)


def describe(g: nx.DiGraph) -> str:
    """Modules, edges and each cycle with its members and internal edges (for messages/reports)."""
    lines = [f"{g.number_of_nodes()} modules, {g.number_of_edges()} edges"]
    for c in cycles(g):
        lines.append(f"cycle of {len(c)}: {', '.join(sorted(c))}")
        for a, b in sorted(g.subgraph(c).edges):
            lines.append(f"    {a} -> {b}")
    return "\n".join(lines)


# -- the contract on this repository -------------------------------------------------------------

@pytest.fixture(scope="module")
def graph():
    return import_graph(ROOT)


def test_core_never_imports_the_learning_layer(graph):
    g, _ = graph
    assert layer_violations(g) == []


def test_torch_only_in_the_learning_layer(graph):
    _, raw = graph
    assert torch_violations(raw) == []


def test_no_import_cycles(graph):
    g, _ = graph
    found = cycles(g)
    unexpected = [c for c in found if c not in ALLOWED_CYCLES]
    assert unexpected == [], describe(g)
    stale = [c for c in ALLOWED_CYCLES if c not in found]
    assert stale == [], f"allow-listed cycles that no longer exist (remove them): {stale}"


#: The floors of ``ptxopt``, bottom first: a module imports only its own floor
#: and those below (imports inside functions and string module names
#: included). What each floor is:
#:
#: * ``kernels``: where kernels come from (the corpus manifest, the command
#:   line's targets and the user's :class:`InputError`); imports nothing;
#: * ``support``: process plumbing (forks, workers, atomic outputs, host state,
#:   code digests) and ``plugins``, the seam for the layers above ptxopt;
#: * ``ptx``: the language -- grammar, words, frozen IR, parser, printer,
#:   layout, opcodes, operand facts;
#: * ``toolchain``: ptxas, nvdisasm, architectures (and the parse -> print ->
#:   ptxas round trip);
#: * ``analysis``: CFG, def-use, loops, dependences, footprints (footprint
#:   inference is an analysis: the sim and the passes read it);
#: * ``sim``: the cycle model (its figures are ESTIMATES), on the analyses;
#: * ``passes``: the transforms, their registry, the pipeline and the pass
#:   manager with its instruments -- below every checker: passes never
#:   import the equivalence checker;
#: * ``interp`` < ``equivalence``: the interpreter, then the checks built on
#:   it (verify, prove, VerifyEach);
#: * ``gpu`` < ``measure``: the GPU harness, then the measurement backends;
#: * ``executor``: where tasks run (local, Ray); it imports neither the
#:   evaluator nor the search;
#: * ``evaluate``: one candidate's passes -> ptxas -> checks -> measure, its
#:   caches and journal; ``search``; ``api`` (``ptxopt.optimize``);
#:   ``triton``; ``testing`` (generators and fuzzers); ``cli``.
#:
#: The ``ptxopt`` package itself (``__init__``: the public names, lazily
#: from ``api``) sits on the floor of ``api``. Above all of them: the
#: re-export stubs at old module paths, and ``rl``.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("ptxopt.kernels",),
    ("ptxopt.support", "ptxopt.plugins"),
    ("ptxopt.ptx",),
    ("ptxopt.toolchain",),
    ("ptxopt.analysis",),
    ("ptxopt.sim",),
    ("ptxopt.passes",),
    ("ptxopt.interp",),
    ("ptxopt.equivalence",),
    ("ptxopt.gpu",),
    ("ptxopt.measure",),
    ("ptxopt.executor",),
    ("ptxopt.evaluate",),
    ("ptxopt.search",),
    ("ptxopt.api",),
    ("ptxopt.triton",),
    ("ptxopt.testing",),
    ("ptxopt.cli",),
)

#: Imports that go up a floor, left on purpose: (importer, imported) -> why.
#: Only ever shrinks.
BACK_ARROWS: dict[tuple[str, str], str] = {}

#: A re-export stub (an old module path kept importable) says so in this line.
STUB_MARK = "# re-export stub written by the package codemod"


def stubs(root: Path, packages=PACKAGES) -> set[str]:
    """The modules that are re-export stubs at old paths (they sit above every floor)."""
    return {m for m, p in module_files(root, packages).items() if STUB_MARK in p.read_text(encoding="utf-8")}


#: the floor of the package module ``ptxopt`` (its ``__init__``)
PACKAGE_FLOOR = "ptxopt.api"


def floor_of(mod: str, layers=LAYERS) -> int | None:
    """The index of ``mod``'s floor in ``layers`` (the longest matching package), or None."""
    if mod == "ptxopt":
        mod = PACKAGE_FLOOR
    best, floor = -1, None
    for i, layer in enumerate(layers):
        for pkg in layer:
            if _in(mod, pkg) and len(pkg) > best:
                best, floor = len(pkg), i
    return floor


def unplaced(g: nx.DiGraph, root: Path, layers=LAYERS) -> list[str]:
    """Modules of ``ptxopt`` on no floor (the package itself and the stubs excepted)."""
    skip = stubs(root) | {"ptxopt"}
    return sorted(m for m in g if _in(m, "ptxopt") and m not in skip and floor_of(m, layers) is None)


def upward_imports(g: nx.DiGraph, root: Path, layers=LAYERS) -> list[tuple[str, str]]:
    """(importer, imported) for every import, string module names included, from a floor to a higher one.
    A module on no floor (the package, a stub, ``rl``) is above them all."""
    g = g.copy()
    # a string naming a module of ptxopt; not the bare word "ptxopt" (the program's name, everywhere)
    g.add_edges_from((a, b) for a, b in string_imports(root, "ptxopt") if b != "ptxopt" and _in(b, "ptxopt"))
    top = len(layers)
    out = []
    for a, b in g.edges:
        fa, fb = floor_of(a, layers), floor_of(b, layers)
        fa = top if fa is None else fa
        fb = top if fb is None else fb
        if fb > fa:
            out.append((a, b))
    return sorted(out)


def test_every_module_is_on_a_floor(graph):
    g, _ = graph
    assert unplaced(g, ROOT) == [], "add the package to LAYERS (a loose top-level module belongs in a package)"


def test_imports_go_down_the_floors(graph):
    g, _ = graph
    found = upward_imports(g, ROOT)
    unexpected = [f"{a} -> {b}" for a, b in found if (a, b) not in BACK_ARROWS]
    assert unexpected == [], unexpected
    stale = [k for k in BACK_ARROWS if k not in found]
    assert stale == [], f"listed back-arrows that no longer exist (remove them): {stale}"


def test_the_executor_imports_neither_the_evaluator_nor_the_search(graph):
    g, _ = graph
    assert [(a, b) for a, b in g.edges if _in(a, "ptxopt.executor")
            and (_in(b, "ptxopt.evaluate") or _in(b, "ptxopt.search"))] == []


#: Reach: module or package -> the roots it must not reach through any chain
#: of imports (each root's modules and whatever imports them are out of its
#: reach; string module names count). ``ptxopt.gpu`` builds, loads, times and
#: compares one kernel: the pass layer, the evaluator, the measurement
#: backends and the search build on it, never the reverse. The pass manager
#: (and everything it imports) reaches none of the instruments that check,
#: compile and measure: they live above it, as LLVM keeps its verifier
#: instruments outside its pass manager (VerifyEach is
#: ``ptxopt.equivalence.instrument``).
FLOORS: dict[str, tuple[str, ...]] = {
    "ptxopt.gpu": ("ptxopt.passes", "ptxopt.evaluate", "ptxopt.measure", "ptxopt.search"),
    "ptxopt.passes.passmanager": ("ptxopt.equivalence", "ptxopt.interp", "ptxopt.equivalence.prove",
                                  "ptxopt.toolchain", "ptxopt.evaluate", "ptxopt.measure", "ptxopt.gpu"),
}


def test_floors(graph):
    g, _ = graph
    g = g.copy()
    bad = {}
    for package, roots in FLOORS.items():
        g.add_edges_from(string_imports(ROOT, package))
        chains = floor_violations(g, package, roots)
        if chains:
            bad[package] = [" -> ".join(c) for c in chains]
    assert bad == {}, bad


def test_the_graph_is_the_whole_tree(graph):
    g, _ = graph
    assert "ptxopt" in g and "ptxopt.cli" in g and "rl" in g
    assert g.number_of_nodes() > 100 and g.number_of_edges() > 400


# -- the checker itself can fail -----------------------------------------------------------------

def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return tmp_path


def test_checker_flags_a_planted_cycle_inside_a_function(tmp_path):
    root = _tree(tmp_path, {
        "ptxopt/__init__.py": "",
        "ptxopt/a.py": "from ptxopt.b import f\n",
        "ptxopt/b.py": "def f():\n    from . import c\n",
        "ptxopt/c.py": "def g():\n    import ptxopt.a\n",
        "rl/__init__.py": "",
    })
    g, _ = import_graph(root)
    assert cycles(g) == [frozenset({"ptxopt.a", "ptxopt.b", "ptxopt.c"})]


def test_checker_flags_a_submodule_reading_its_package(tmp_path):
    root = _tree(tmp_path, {
        "ptxopt/__init__.py": "",
        "ptxopt/pkg/__init__.py": "from .core import X\n",
        "ptxopt/pkg/core.py": "X = 1\n",
        "ptxopt/pkg/user.py": "from ptxopt.pkg import X\n",
        "ptxopt/pkg/fine.py": "from . import core\nfrom ptxopt.pkg import core as c2\n",
        "rl/__init__.py": "",
    })
    g, _ = import_graph(root)
    assert g.has_edge("ptxopt.pkg.user", "ptxopt.pkg")
    assert g.has_edge("ptxopt.pkg.fine", "ptxopt.pkg.core")
    assert not g.has_edge("ptxopt.pkg.fine", "ptxopt.pkg")
    assert cycles(g) == []          # user -> pkg -> core: no way back
    (root / "ptxopt/pkg/__init__.py").write_text("from .core import X\nfrom .user import *\n")
    g, _ = import_graph(root)
    assert cycles(g) == [frozenset({"ptxopt.pkg", "ptxopt.pkg.user"})]


def test_checker_flags_the_pass_manager_reaching_an_instrument(tmp_path):
    root = _tree(tmp_path, {"ptxopt/__init__.py": "", "ptxopt/passes/__init__.py": "",
                            "ptxopt/passes/passmanager.py": "from ptxopt.passes import base\n",
                            "ptxopt/passes/base.py": "def f():\n    import ptxopt.interp.engine\n",
                            "ptxopt/interp/__init__.py": "", "ptxopt/interp/engine.py": ""})
    g, _ = import_graph(root, ("ptxopt",))
    chains = floor_violations(g, "ptxopt.passes.passmanager", FLOORS["ptxopt.passes.passmanager"])
    assert chains == [["ptxopt.passes.passmanager", "ptxopt.passes.base", "ptxopt.interp.engine"]]


def test_checker_flags_an_import_up_a_floor_inside_a_function_or_a_string(tmp_path):
    layers = (("ptxopt.ptx",), ("ptxopt.passes",), ("ptxopt.equivalence",))
    files = {
        "ptxopt/__init__.py": "", "ptxopt/ptx/__init__.py": "", "ptxopt/ptx/ir.py": "",
        "ptxopt/passes/__init__.py": "", "ptxopt/passes/base.py": "from ptxopt.ptx import ir\n",
        "ptxopt/equivalence/__init__.py": "", "ptxopt/equivalence/check.py": "from ptxopt.passes import base\n",
        "ptxopt/ir.py": STUB_MARK + "\nfrom ptxopt.ptx import ir as _moved\n",
        "rl/__init__.py": "",
    }
    root = _tree(tmp_path, files)

    def up():
        g, _ = import_graph(root)
        return upward_imports(g, root, layers), unplaced(g, root, layers)

    assert up() == ([], [])                      # the stub sits above every floor, on none
    (root / "ptxopt/passes/base.py").write_text("from ptxopt.ptx import ir\ndef f():\n    import ptxopt.equivalence.check\n")
    assert up() == ([("ptxopt.passes.base", "ptxopt.equivalence.check")], [])
    (root / "ptxopt/passes/base.py").write_text('_LAZY = {"c": "ptxopt.equivalence.check", "n": "ptxopt"}\n')
    assert up() == ([("ptxopt.passes.base", "ptxopt.equivalence.check")], [])
    (root / "ptxopt/passes/base.py").write_text("from ptxopt import ir\n")   # through the stub: above every floor
    assert up() == ([("ptxopt.passes.base", "ptxopt.ir")], [])
    (root / "ptxopt/loose.py").write_text("")
    assert up()[1] == ["ptxopt.loose"]


def test_checker_flags_layers_and_torch(tmp_path):
    root = _tree(tmp_path, {
        "ptxopt/__init__.py": "",
        "ptxopt/x.py": "def f():\n    try:\n        import torch.nn as nn\n    except ImportError:\n        pass\n",
        "ptxopt/y.py": "def f():\n    from rl.policy import P\n",
        "rl/__init__.py": "",
        "rl/policy.py": "import torch\nfrom ptxopt import x\nP = 1\n",
    })
    g, raw = import_graph(root)
    assert layer_violations(g) == [("ptxopt.y", "rl.policy")]
    assert torch_violations(raw) == [("ptxopt.x", "torch.nn")]
    assert g.has_edge("rl.policy", "ptxopt.x")



def test_checker_flags_a_floor_reached_through_others_or_a_string(tmp_path):
    files = {
        "ptxopt/__init__.py": "",
        "ptxopt/ir.py": "",
        "ptxopt/equivalence/interpret.py": "from ptxopt import ir\n",
        "ptxopt/passes/__init__.py": "",
        "ptxopt/passes/base.py": "from ptxopt.ir import *\n",
        "ptxopt/passmanager.py": "from ptxopt.passes.base import *\nfrom ptxopt import verify\n",
        "ptxopt/api.py": "from ptxopt import passmanager\n",
        "ptxopt/gpu/__init__.py": '_LAZY = {"run": "ptxopt.gpu.run"}\n',
        "ptxopt/gpu/run.py": "def f():\n    from ptxopt.equivalence.interpret import x\n",
        "rl/__init__.py": "",
    }
    root = _tree(tmp_path, files)

    def chains():
        g, _ = import_graph(root)
        g.add_edges_from(string_imports(root, "ptxopt.gpu"))
        return [" -> ".join(c) for c in floor_violations(g, "ptxopt.gpu", ("ptxopt.passmanager", "ptxopt.passes"))]

    assert string_imports(root, "ptxopt.gpu") == [("ptxopt.gpu", "ptxopt.gpu.run")]
    assert chains() == []                       # verify and ir are below the pass manager
    (root / "ptxopt/equivalence/interpret.py").write_text("from ptxopt import ir\ndef g():\n    import ptxopt.api\n")
    assert chains() == ["ptxopt.gpu.run -> ptxopt.equivalence.interpret -> ptxopt.api -> ptxopt.passmanager"]
    (root / "ptxopt/equivalence/interpret.py").write_text(files["ptxopt/equivalence/interpret.py"])
    (root / "ptxopt/gpu/__init__.py").write_text('_LAZY = {"run": "ptxopt.gpu.run", "P": "ptxopt.passes.base"}\n')
    assert chains() == ["ptxopt.gpu -> ptxopt.passes.base"]
