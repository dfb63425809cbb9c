"""Parametric passes (``maxnreg{n=96}``) and the learning layer's action list.

A parametric kind takes typed parameters whose legal values the pass
declares; the names from before parameters are aliases that print
canonically; every action is a canonical pipeline string of one pass, and
everything sized by the action space derives from
:mod:`ptxopt.search.actions`.
"""

import ast
import json
import sys
from pathlib import Path

import pytest

from ptxopt import emit, parse
from ptxopt.kernels.corpus import get
from ptxopt.ptx.opcodes import LOAD_CACHE_OPS, STORE_CACHE_OPS
from ptxopt.passes import pass_kinds, pass_names
from ptxopt.passes.register_budget import MaxNReg
from ptxopt.passes.registry import get_pass_class, resolve
from ptxopt.passes.pipeline import Pipeline, PipelineError, make_pass
from ptxopt.search import observation_names
from ptxopt.search.actions import (ACTIONS, N_ACTIONS, PASS_ACTIONS, STOP, STOP_INDEX, action_index, action_pass,
                                   families)

ROOT = Path(__file__).resolve().parents[2]


# -- parameters, aliases, the canonical form ----------------------------------------------


@pytest.mark.parametrize("alias", [n for n in pass_names() if resolve(n)[1]])
def test_every_alias_is_its_parametric_form_and_prints_as_the_alias(alias):
    kind, params = resolve(alias)
    long = kind + "{" + ",".join(f"{k}={v}" for k, v in params.items()) + "}"
    p = make_pass(alias)
    assert Pipeline.parse(long).passes[0] == p
    assert str(Pipeline.parse(long)) == alias == p.name == str(p)
    assert p.kind == kind and p.parameters() == params


@pytest.mark.parametrize("text,canonical,name", [
    ("maxnreg{n=96}", "maxnreg{n=96}", "maxnreg{n=96}"),
    ("maxnreg{n=0x60}", "maxnreg{n=96}", "maxnreg{n=96}"),
    ("maxnreg{ override=1, n=96 }", "maxnreg{n=96,override=True}", "maxnreg{n=96}"),
    ("maxnreg{n=128,override=1}", "maxnreg_128{override=True}", "maxnreg_128"),
    ("cache_ld{op=lu}", "cache_ld{op=lu}", "cache_ld{op=lu}"),
    ("cache_st{op=cg}", "cache_st{op=cg}", "cache_st{op=cg}"),
    ("reorder{policy=il}", "reorder_il", "reorder_il"),
    ("prefetch{level=L2}", "prefetch_L2", "prefetch_L2"),
])
def test_canonical_form_round_trips(text, canonical, name):
    p = Pipeline.parse(text)
    assert str(p) == canonical and p.passes[0].name == name
    assert Pipeline.parse(str(p)) == p


def test_legal_values_come_from_the_pass():
    assert [str(make_pass("cache_ld", {"op": op})) for op in LOAD_CACHE_OPS] == \
        ["cache_ca", "cache_cg", "cache_cs", "cache_ld{op=lu}", "cache_cv"]
    assert [str(make_pass("cache_st", {"op": op})) for op in STORE_CACHE_OPS] == \
        ["st_cache_wb", "cache_st{op=cg}", "st_cache_cs", "st_cache_wt"]
    assert str(Pipeline.parse("maxnreg{n=24}")) == "maxnreg{n=24}"
    assert str(Pipeline.parse("maxnreg{n=255}")) == "maxnreg_255"


@pytest.mark.parametrize("text,msg", [
    ("maxnreg", "pass 'maxnreg' needs its parameter n: maxnreg{n=24..255}"),
    ("maxnreg{n=23}", "pass 'maxnreg': n=23 is not one of 24..255"),
    ("maxnreg{n=256}", "pass 'maxnreg': n=256 is not one of 24..255"),
    ("maxnreg{n=lots}", "pass 'maxnreg': option n='lots' is not a valid int"),
    ("maxnreg{m=64}", "pass 'maxnreg' has no option 'm' (options: n, override)"),
    ("maxnreg_128{n=64}", "pass 'maxnreg_128' is maxnreg{n=128}: its n is fixed (write maxnreg{n=64} instead)"),
    ("cache_cg{override=1}", "pass 'cache_cg' has no option 'override' (options: none)"),
    ("cache_ld{op=wt}", "pass 'cache_ld': op='wt' is not one of ca|cg|cs|lu|cv"),
    ("cache_st{op=cv}", "pass 'cache_st': op='cv' is not one of wb|cg|cs|wt"),
    ("reorder{policy=random}", "pass 'reorder': policy='random' is not one of cp|il|lf|sl"),
    ("prefetch{level=l1}", "pass 'prefetch': level='l1' is not one of L1|L2"),
    ("maxnreg{n=96},maxnreg_32", "conflicting passes: 'maxnreg{n=96}' and 'maxnreg_32' are both in the "
                                 "register-budget family (at most one per pipeline)"),
    ("cache_ld{op=lu},cache_ca", "conflicting passes: 'cache_ld{op=lu}' and 'cache_ca' are both in the "
                                 "load-cache-hint family (at most one per pipeline)"),
])
def test_bad_parameters_fail_in_one_line_saying_what_is_valid(text, msg):
    with pytest.raises(PipelineError) as e:
        Pipeline.parse(text)
    assert str(e.value) == msg


def test_unknown_pass_lists_the_names_and_the_parametric_forms():
    with pytest.raises(PipelineError) as e:
        Pipeline.parse("maxreg{n=64}")
    msg = str(e.value)
    assert "\n" not in msg and "maxnreg_128" in msg and "maxnreg{n=24..255}" in msg
    assert "cache_ld{op=ca|cg|cs|lu|cv}" in msg and "prefetch{level=L1|L2}" in msg


def test_direct_construction_is_validated_too():
    with pytest.raises(ValueError, match="24..255"):
        MaxNReg(n=8)
    with pytest.raises(ValueError):
        MaxNReg(n=True)  # a bool is not a budget
    assert MaxNReg(n=64) == make_pass("maxnreg_64")


# -- new variants run ------------------------------------------------------------------------


def test_a_budget_without_an_alias_runs_and_reports_under_its_own_name():
    m = parse(get("gemm_tile_2x2x2").ptx_text())
    out, rep = make_pass("maxnreg", {"n": "96"}).apply(m)
    assert rep.pass_name == "maxnreg{n=96}" and rep.changed_any
    assert all(e.directive(".maxnreg").args == ("96",) for e in out.entries)
    _, again = make_pass("maxnreg", {"n": "64"}).apply(out)
    assert "use maxnreg_64{override=1} to replace it" in again.refused[0].what
    _, again = Pipeline.parse("maxnreg{n=100}").passes[0].apply(out)
    assert "use maxnreg{n=100,override=1} to replace it" in again.refused[0].what
    out2, rep2 = Pipeline.parse("maxnreg{n=100,override=1}").passes[0].apply(out)
    assert rep2.changed_any and out2.entries[0].directive(".maxnreg").args == ("100",)


def test_the_new_cache_operators_rewrite():
    """(Their legality traps -- .lu on ld.global.nc, volatile and shared
    accesses -- are tests/adversarial/nc_cache_lu.ptx, volatile_cache_hint.ptx
    and cache_hint_shared.ptx.)"""
    m = parse(get("gemm_tile_2x2x2").ptx_text())
    out, rep = make_pass("cache_ld", {"op": "lu"}).apply(m)
    assert rep.changed_any and "ld.global.lu" in emit(out)
    out, rep = make_pass("cache_st", {"op": "cg"}).apply(m)
    assert rep.changed_any and "st.global.cg" in emit(out)


# -- the action list --------------------------------------------------------------------------


def test_actions_are_canonical_single_pass_strings_then_stop():
    assert ACTIONS == (*PASS_ACTIONS, STOP) and len(set(ACTIONS)) == N_ACTIONS
    assert STOP_INDEX == N_ACTIONS - 1
    for i, a in enumerate(PASS_ACTIONS):
        assert str(Pipeline.parse(a)) == a, f"{a!r} is not written the way it prints"
        assert len(Pipeline.parse(a)) == 1 and action_pass(a).name == a
        assert action_index(a) == i
    with pytest.raises(ValueError, match="not an action"):
        action_index("maxnreg_128{override=True}")


def test_observation_family_slots_derive_from_the_actions():
    fams = families()
    assert set(fams) == {action_pass(a).family for a in PASS_ACTIONS}
    assert fams[0] == "vectorize"  # composing family first, then the exclusive ones sorted
    assert list(fams[1:]) == sorted(fams[1:])
    assert [n for n in observation_names() if n.startswith("active:")] == [f"active:{f}" for f in fams]


def test_policy_output_size_is_the_action_count():
    pytest.importorskip("torch")
    from ptxopt_rl.policy import PolicyConfig

    assert PolicyConfig(obs_dim=3).n_actions == N_ACTIONS


def test_no_other_module_spells_out_the_action_list():
    """A pass's module (its own names: kind and aliases) and the action tuple
    are the only lists of these names in the code; anything else must derive
    from them."""
    names = set(PASS_ACTIONS) | set(pass_names())
    own: dict[Path, set[str]] = {}  # a pass module -> the names its classes declare
    for kind in pass_kinds():
        cls = get_pass_class(kind)
        own.setdefault(Path(sys.modules[cls.__module__].__file__).resolve(), set()).update([kind, *cls.aliases])
    offenders = {}
    for path in [*(ROOT / "ptxopt").rglob("*.py"), *(ROOT / "rl").rglob("*.py")]:
        if path == ROOT / "ptxopt/search/actions.py":
            continue
        tree = ast.parse(path.read_text())
        lits = {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and n.value in names}
        lits -= own.get(path.resolve(), set())
        if len(lits) > 3:
            offenders[str(path.relative_to(ROOT))] = sorted(lits)
    assert not offenders


def test_passes_listing_shows_names_and_parametric_forms():
    from click.testing import CliRunner

    from ptxopt.cli import cli

    res = CliRunner().invoke(cli, ["passes", "--json"])
    rows = json.loads(res.stdout)
    assert [r["name"] for r in rows] == pass_names()
    row = next(r for r in rows if r["name"] == "maxnreg_128")
    assert row["kind"] == "maxnreg" and row["parameters"] == {"n": 128} and row["signature"] == "maxnreg{n=24..255}"
    assert set(r["kind"] for r in rows) == set(pass_kinds())
    text = CliRunner().invoke(cli, ["passes"]).stdout
    assert "maxnreg{n=24..255}" in text and "cache_st{op=wb|cg|cs|wt}" in text
