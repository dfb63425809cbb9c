"""The operand walker (:mod:`ptxopt.ptx.operand_facts`): one walk, kept on the
instruction, read by everyone.

* the facts see through vectors, pairs, braces and address expressions;
* they are cached on the instruction and an edited instruction never carries
  the facts of the one it replaced;
* no module outside the walker inspects operand node types (an AST check with
  a short, justified allow-list), and the check itself can fail;
* class 2 (special registers in nested operands are impure) and class 3
  (addresses modulo their width) hold in the walker, the alias rule, the
  dependency graphs and the prover.
"""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest

from ptxopt import parse
from ptxopt.analysis.alias import Access, may_alias
from ptxopt.analysis.dag import build_dag
from ptxopt.analysis.depgraph import build_depgraph
from ptxopt.ptx.operand_facts import alias_offset, facts, ranges_disjoint, wrap

ROOT = Path(__file__).resolve().parents[2]

HEAD = ".version 8.0\n.target sm_89\n.address_size 64\n"


def kernel(body: str, decls: str = "") -> str:
    return (HEAD + ".visible .entry k(.param .u64 out, .param .u64 in)\n{\n"
            ".reg .pred %p<4>;\n.reg .b16 %rs<8>;\n.reg .b32 %r<12>;\n.reg .b64 %rd<12>;\n"
            + decls + body + "\nret;\n}\n")


def instrs(body: str, decls: str = ""):
    return list(parse(kernel(body, decls)).entries[0].instructions())


# ---------------------------------------------------------------------------
# the walk
# ---------------------------------------------------------------------------


def test_specials_inside_vectors_are_seen_and_make_an_ordering_point():
    clock, loc, plain, tid = instrs("mov.b64 %rd5, {%clock, %clock_hi};\nmov.b64 %rd6, {%warpid, %smid};\n"
                                    "mov.b64 %rd7, {%r1, %r2};\nmov.u32 %r3, %tid.x;")[:4]
    assert facts(clock).sregs == ("%clock", "%clock_hi") and facts(clock).impure_sreg
    assert facts(clock).role == "order" and facts(clock).uses == () and facts(clock).defs == ("%rd5",)
    assert facts(loc).role == "order"
    assert facts(plain).role == "pure" and facts(plain).uses == ("%r1", "%r2")
    assert facts(tid).role == "pure" and facts(tid).sregs == ("%tid.x",)  # a launch constant stays pure


def test_addresses_pairs_and_calls():
    st, setp, ld = instrs("@%p1 st.shared.v2.u32 [%r4+-4], {%r1, %r2};\nsetp.lt.s32 %p1|%p2, %r1, %r2;\n"
                          "ld.global.u16 %rs1, [%rd4+18446744073709551612];")[:3]
    f = facts(st)
    assert f.defs == () and f.uses == ("%p1", "%r4", "%r1", "%r2") and f.role == "store"
    a = f.address
    assert (a.space, a.kind, a.name, a.offset, a.width, a.size) == ("shared", "reg", "%r4", -4, 32, 8)
    assert facts(setp).defs == ("%p1", "%p2") and facts(setp).dests == ("%p1", "%p2")
    assert facts(ld).address.offset == -4 and facts(ld).address.width == 64  # modulo 2**64


def test_shared_offsets_normalise_modulo_32_bits():
    a, b = instrs("st.shared.u32 [%r1+-4], %r2;\nld.shared.u32 %r3, [%r1+4294967292];")[:2]
    assert facts(a).address.offset == facts(b).address.offset == -4


# ---------------------------------------------------------------------------
# caching and invalidation
# ---------------------------------------------------------------------------


def test_facts_are_cached_on_the_instruction_and_edits_start_fresh():
    ins = instrs("ld.global.u32 %r1, [%rd4+8];")[0]
    f = facts(ins)
    assert facts(ins) is f and ins._facts is f  # computed once, kept on the instruction
    new = dataclasses.replace(ins, operands=(ins.operands[0], dataclasses.replace(ins.operands[1], offset=16)))
    assert new._facts is None  # an edit is a new object with an empty slot
    assert facts(new).address.offset == 16 and facts(ins).address.offset == 8
    mods = ins.with_modifiers(("shared", "u32"))
    assert facts(mods).address.space == "shared"
    # the cache is invisible to equality and hashing (the round-trip contract)
    twin = instrs("ld.global.u32 %r1, [%rd4+8];")[0]
    assert twin == ins and hash(twin) == hash(ins) and twin._facts is None
    import pickle

    back = pickle.loads(pickle.dumps(ins))  # pickles carry the instruction, not the facts
    assert back == ins and back.line == ins.line and back._facts is None and facts(back) == f


def test_the_slot_is_not_an_init_field():
    from ptxopt.ptx.ir import Instruction

    f = next(f for f in dataclasses.fields(Instruction) if f.name == "_facts")
    assert not f.init and not f.compare and not f.repr


# ---------------------------------------------------------------------------
# addresses modulo their width: the alias rule and both dependency graphs
# ---------------------------------------------------------------------------


def test_modular_disjointness():
    assert wrap(4294967292, 32) == -4 and wrap(1 << 63, 64) == -(1 << 63)
    assert not ranges_disjoint(-4, 4, 4294967292, 4)
    assert not ranges_disjoint(0, 4, 1 << 32, 4)
    assert not ranges_disjoint(1 << 63, 4, -(1 << 63), 4)  # both 0 modulo 2**32
    assert ranges_disjoint(0, 4, 4, 4) and ranges_disjoint(-8, 4, -4, 4)
    assert alias_offset(1 << 30) is None and alias_offset(-4) == -4
    a = Access(0, True, "shared", ("reg", "%r1", 0), -4, 4)
    b = Access(1, False, "shared", ("reg", "%r1", 0), 4294967292, 4)
    assert may_alias(a, b)


@pytest.mark.parametrize("st_off, ld_off, space, base", [
    ("-4", "4294967292", "shared", "%r1"),
    ("2147483648", "-2147483648", "shared", "%r1"),
    ("-4", "18446744073709551612", "global", "%rd5"),
    ("9223372036854775808", "-9223372036854775808", "global", "%rd5"),
])
def test_same_bytes_modulo_the_width_are_ordered(st_off, ld_off, space, base):
    body = f"st.{space}.u32 [{base}+{st_off}], %r2;\nld.{space}.u32 %r3, [{base}+{ld_off}];"
    ins = instrs(body)[:2]
    g = build_depgraph(ins)
    seen, todo = set(), [1]
    while todo:  # the store is an ancestor of the load (directly or through a join node)
        for p in g.preds[todo.pop()]:
            if p not in seen:
                seen.add(p)
                todo.append(p)
    assert 0 in seen
    assert build_dag(ins).has_edge(0, 1)


# ---------------------------------------------------------------------------
# the prover: a vector clock read is two values
# ---------------------------------------------------------------------------


def test_prover_does_not_merge_two_vector_clock_reads():
    from ptxopt.equivalence.prove import prove

    two = kernel("ld.param.u64 %rd1, [out];\ncvta.to.global.u64 %rd3, %rd1;\n"
                 "mov.b64 %rd5, {%clock, %clock_hi};\nmov.b64 %rd6, {%clock, %clock_hi};\n"
                 "sub.s64 %rd7, %rd6, %rd5;\nst.global.u64 [%rd3], %rd7;")
    zero = kernel("ld.param.u64 %rd1, [out];\ncvta.to.global.u64 %rd3, %rd1;\n"
                  "mov.b64 %rd5, {%clock, %clock_hi};\n"
                  "sub.s64 %rd7, %rd5, %rd5;\nst.global.u64 [%rd3], %rd7;")
    r = prove(parse(two), parse(zero))
    assert not r.proved, r


def test_prover_does_not_merge_two_vector_location_reads():
    from ptxopt.equivalence.prove import prove

    body = ("ld.param.u64 %rd1, [out];\ncvta.to.global.u64 %rd3, %rd1;\n"
            "mov.b64 %rd5, {%warpid, %smid};\nmov.b64 %rd6, {%warpid, %smid};\n"
            "st.global.u64 [%rd3], %rd5;\nst.global.u64 [%rd3+8], ")
    r = prove(parse(kernel(body + "%rd6;")), parse(kernel(body + "%rd5;")))
    assert not r.proved, r


# ---------------------------------------------------------------------------
# no module inspects operands on its own
# ---------------------------------------------------------------------------

#: the operand node classes of :mod:`ptxopt.ptx.ir`
OPERAND_TYPES = frozenset({"Reg", "Imm", "ConstExpr", "Sym", "Neg", "Pair", "Vec", "Addr", "ParenList"})

#: Modules that may test operand node types, each with its reason. Everything
#: else reads :func:`ptxopt.ptx.operand_facts.facts` (or its small readers).
ALLOWED: dict[str, str] = {
    "ptxopt/ptx/operand_facts.py": "the walker itself",
    "ptxopt/ptx/parser.py": "builds operand nodes from the parse tree",
    "ptxopt/ptx/emit.py": "prints operand nodes",
    # Evaluators: they turn each operand node into a value (bits in the
    # interpreter, a value-graph node in the prover); that is execution, not
    # a fact about the instruction, and is decoded once per instruction
    # (interp.decode builds closures; the prover's val/address are memoised
    # by the value graph).
    "ptxopt/interp/decode.py": "the interpreter's operand decoder (decode once into closures)",
    "ptxopt/interp/ops/": "interpreter instruction semantics writing vector/pair destinations",
    "ptxopt/equivalence/prove/symexec.py:BlockExecutor.val": "symbolic evaluation of an operand",
    "ptxopt/equivalence/prove/symexec.py:BlockExecutor.address": "symbolic evaluation of an address (raw offsets, "
                                                     "guarded by prove.memory's window)",
    # An evaluator too: it turns address operands into affine forms over the launch's indices (as the
    # prover's symbolic execution turns them into value-graph nodes). Moving it onto the walker's facts
    # is open work.
    "ptxopt/analysis/global_footprint.py": "affine evaluation of address operands (footprints)",
    "ptxopt/equivalence/prove/smt/paths.py:PathEncoder._any": "symbolic evaluation of an operand (loop proof)",
    "ptxopt/equivalence/prove/smt/paths.py:PathEncoder._address_value": "symbolic evaluation of an address "
                                                                        "(loop proof)",
    # A rewriter that changes operands on purpose
    "ptxopt/testing/mutants.py": "the mutation generator rewrites operands on purpose (it breaks kernels)",
    # Loop rewriters that rename every register of a copied body and read its address forms (a copy's
    # registers are fresh, so each operand node is rebuilt). Moving them onto the walker's facts
    # (register names and address parts of each operand) is open work.
    "ptxopt/passes/loop_version.py": "renames a copied loop body's operands and reads their address forms",
    "ptxopt/passes/pipeline_loads.py": "renames a copied address chain's operands into rotating registers",
}


def _type_tests(tree: ast.AST):
    """(function qualname, line, class name) for every comparison naming an
    operand class (``type(x) is C``, ``t is C`` after ``t = type(x)``,
    ``type(x) in (C, D)``), ``isinstance(x, C)`` and ``case C(...)``."""
    out = []

    def names(node) -> set[str]:
        if isinstance(node, ast.Name):
            return {node.id}
        if isinstance(node, ast.Attribute):
            return {node.attr}
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            return set().union(*(names(e) for e in node.elts)) if node.elts else set()
        return set()

    def visit(node, scope: str) -> None:
        for child in ast.iter_child_nodes(node):
            sub = scope
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                sub = f"{scope}.{child.name}" if scope else child.name
            hit: set[str] = set()
            if isinstance(child, ast.Compare):  # type(o) is Reg, t is Reg, type(i) in (Reg, Vec)
                for side in (child.left, *child.comparators):
                    hit |= names(side)
            elif isinstance(child, ast.Call) and isinstance(child.func, ast.Name) \
                    and child.func.id == "isinstance" and len(child.args) == 2:
                hit |= names(child.args[1])
            elif isinstance(child, ast.MatchClass):
                hit |= names(child.cls)
            for n in sorted(hit & OPERAND_TYPES):
                out.append((sub, child.lineno, n))
            visit(child, sub)

    visit(tree, "")
    return out


def violations(root: Path, allowed: dict[str, str]) -> list[str]:
    out = []
    for path in sorted((root / "ptxopt").rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if any(rel == a or (a.endswith("/") and rel.startswith(a)) for a in allowed):
            continue
        for scope, line, name in _type_tests(ast.parse(path.read_text(encoding="utf-8"))):
            if f"{rel}:{scope}" in allowed:
                continue
            out.append(f"{rel}:{line} ({scope or 'module'}) tests an operand for {name}")
    return out


def test_only_the_walker_inspects_operand_types():
    found = violations(ROOT, ALLOWED)
    assert not found, ("read ptxopt.ptx.operand_facts instead of testing operand node types:\n  "
                       + "\n  ".join(found))


def test_every_allowance_is_still_needed():
    for entry in ALLOWED:
        path, _, scope = entry.partition(":")
        p = ROOT / path
        assert p.exists(), entry
        if p.is_dir():
            continue
        tests = _type_tests(ast.parse(p.read_text(encoding="utf-8")))
        assert any(not scope or s == scope for s, _, _ in tests), f"{entry} no longer inspects operands"


def test_the_check_can_fail(tmp_path):
    (tmp_path / "ptxopt").mkdir()
    (tmp_path / "ptxopt" / "bad.py").write_text(
        "from ptxopt.ptx.ir import Reg, Vec\n"
        "def f(o):\n    return type(o) is Reg\n"
        "def g(o):\n    return isinstance(o, (Vec, int))\n"
        "def h(o):\n    return type(o) in (Reg, Vec)\n"
        "def k(o):\n    t = type(o)\n    return t is Reg\n"
        "def ok(o):\n    return type(o) is int\n")
    found = violations(tmp_path, {})
    assert len(found) == 5 and "bad.py:3 (f)" in found[0] and "(k) tests an operand for Reg" in found[-1], found
    assert violations(tmp_path, {f"ptxopt/bad.py:{f}": "" for f in "fghk"}) == []


def test_with_modifiers_is_replace_of_the_modifiers():
    # with_modifiers spells dataclasses.replace out for speed: a field added to
    # Instruction must reach it too (this fails if one is dropped)
    from ptxopt.ptx.ir import Instruction

    ins = dataclasses.replace(instrs("@!%p1 ld.global.u32 %r1, [%rd4+8];")[0], line=17)
    init = [f.name for f in dataclasses.fields(Instruction) if f.init]
    assert init == ["opcode", "modifiers", "operands", "guard", "guard_neg", "line"]
    new = ins.with_modifiers(["global", "cg", "u32"])
    ref = dataclasses.replace(ins, modifiers=("global", "cg", "u32"))
    assert all(getattr(new, n) == getattr(ref, n) for n in init) and new._facts is None
