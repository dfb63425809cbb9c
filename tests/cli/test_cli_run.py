"""``ptxopt run`` and ``ptxopt compile``: architecture from .target, input
rejections, launch contracts and the inconclusive exit."""

import json
import shutil
from pathlib import Path

from broken_rewrite import STORE_ONE, append_bad_load, patch_maxnreg, with_bad_load
from cli_helpers import run_cli as run

DATA = Path(__file__).parents[1] / "data" / "contract"
SM90A = str(DATA / "sm90a_setmaxnreg.ptx")
DYN = str(DATA / "dyn_smem.ptx")
DYN_CONTRACT = ["--grid", "1", "--block", "32", "--shared-bytes", "128", "--scalar", "dyn_smem_param_2=32"]


def test_verify_each_on_an_sm90a_kernel_uses_its_target():
    r = run("run", "--verify-each", "--passes", "vec_ld", SM90A)
    assert r.exit_code == 0, r.stderr
    assert "ld.global.v4.f32" in r.stdout
    assert "verified: after 'vec_ld': k: proved" in r.stderr and "launch: grid" in r.stderr


def test_an_input_ptxas_rejects_is_exit_2_with_ptxas_message_not_a_pass_failure():
    r = run("run", "--verify-each", "--arch", "sm_89", "--passes", "vec_ld", SM90A)
    assert r.exit_code == 2
    assert "before any pass" in r.stderr and "SM version" in r.stderr
    assert "pass failure" not in r.stderr and "reproducer" not in r.stderr


def test_compile_defaults_to_the_module_target():
    r = run("compile", "--json", SM90A)
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["arch"] == "sm_90a"
    assert run("compile", "--arch", "sm_89", SM90A).exit_code == 2


def test_unchecked_equivalence_exits_4_unless_allowed():
    no_shared = ["--grid", "1", "--block", "32"]  # the kernel's dynamic shared memory not given: it faults
    r = run("run", "--verify-each", "--no-prove", "--passes", "vec_ld", *no_shared, DYN)
    assert r.exit_code == 4
    assert "inconclusive: after 'vec_ld': dyn_smem: equivalence not established" in r.stderr
    assert "out of bounds" in r.stderr and "(from options)" in r.stderr and "--allow-unchecked" in r.stderr
    assert run("run", "--verify-each", "--passes", "vec_ld", *no_shared, DYN).exit_code == 0  # proved: no launch
    r = run("run", "--verify-each", "--no-prove", "--allow-unchecked", "--passes", "vec_ld", *no_shared, DYN)
    assert r.exit_code == 0 and "inconclusive:" in r.stderr and "ld.global.v4.f32" in r.stdout
    # no launch given: the inferred one gives the unsized .extern .shared array memory, and decides
    r = run("run", "--verify-each", "--no-prove", "--passes", "vec_ld", DYN)
    assert r.exit_code == 0 and "32768 B dynamic shared (inferred from the PTX of dyn_smem" in r.stderr


def test_contract_options_make_it_conclusive_and_json_states_the_contract():
    r = run("run", "--verify-each", "--no-prove", "--json", "--passes", "vec_ld", *DYN_CONTRACT, DYN)
    assert r.exit_code == 0, r.stderr
    doc = json.loads(r.stdout)
    v = doc["verify"]
    assert v["arch"] == "sm_89" and v["inconclusive"] == 0
    assert v["launches"]["dyn_smem"] == {"source": "options", "origin": "options", "role": "check",
                                         "guessed": False, "grid": [1, 1, 1], "block": [32, 1, 1],
                                         "shared_bytes": 128, "scalars": {"dyn_smem_param_2": 32},
                                         "buffers": "default"}
    assert [c["status"] for c in v["checks"]] == ["equal"]
    assert "block 32x1x1, 128 B dynamic shared, dyn_smem_param_2=32 (from options)" in r.stderr


def test_contract_file_next_to_the_ptx_is_loaded_automatically(tmp_path):
    ptx = tmp_path / "dyn_smem.ptx"
    shutil.copy(DYN, ptx)
    contract = {"entry": "dyn_smem", "launch": {"grid": [1, 1, 1], "block": [32, 1, 1], "shared_bytes": 128},
                "params": [{"name": "dyn_smem_param_2", "role": "scalar", "dtype": "u32", "value": 32}]}
    (tmp_path / "dyn_smem.contract.json").write_text(json.dumps(contract))
    r = run("run", "--verify-each", "--passes", "vec_ld", str(ptx))
    assert r.exit_code == 0, r.stderr
    assert "(from dyn_smem.contract.json)" in r.stderr
    # --contract names another file; options override single fields of it
    other = tmp_path / "other.json"
    other.write_text(json.dumps({**contract, "launch": {**contract["launch"], "shared_bytes": 0}}))
    r = run("run", "--verify-each", "--no-prove", "--passes", "vec_ld", "--contract", str(other), str(ptx))
    assert r.exit_code == 4 and "(from other.json)" in r.stderr and "inconclusive" in r.stderr
    r = run("run", "--verify-each", "--passes", "vec_ld", "--contract", str(other), "--shared-bytes", "128",
            str(ptx))
    assert r.exit_code == 0 and "(from other.json + options)" in r.stderr


def test_bad_contracts_are_input_errors(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    r = run("run", "--verify-each", "--passes", "vec_ld", "--contract", str(bad), DYN)
    assert r.exit_code == 2 and "invalid JSON" in r.stderr
    r = run("run", "--verify-each", "--passes", "vec_ld", "--block", "32", DYN)
    assert r.exit_code == 2 and "--grid" in r.stderr
    bad.write_text(json.dumps({"launch": {"grid": [1], "block": [1]},
                               "params": [{"name": "nope", "role": "scalar", "value": 1}]}))
    r = run("run", "--verify-each", "--passes", "vec_ld", "--contract", str(bad), DYN)
    assert r.exit_code == 2 and "no parameter nope" in r.stderr


def test_register_budget_refusal_is_reported_not_a_failure():
    src = DATA / "mma_f64_budget.ptx"
    r = run("run", "--verify-each", "--allow-unchecked", "--json", "--passes", "maxnreg_32", str(src))
    assert r.exit_code == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["changed"] is False and "register target" in doc["passes"][0]["reverted"]
    assert "pass 'maxnreg_32' reverted" in r.stderr


def test_a_contract_only_matters_to_verify_each(tmp_path):
    ptx = tmp_path / "dyn_smem.ptx"
    shutil.copy(DYN, ptx)
    (tmp_path / "dyn_smem.contract.json").write_text("{")  # stale, broken
    r = run("run", "--passes", "vec_ld", str(ptx))
    assert r.exit_code == 0 and "ld.global.v4.f32" in r.stdout
    assert run("run", "--verify-each", "--passes", "vec_ld", str(ptx)).exit_code == 2


def test_unknown_scalar_is_bad_input_for_verify_each():
    r = run("run", "--verify-each", "--passes", "vec_ld", "--grid", "1", "--block", "1",
            "--scalar", "nosuch=1", DYN)
    assert r.exit_code == 2 and "no parameter nosuch" in r.stderr


def test_run_checks_its_output_with_ptxas_by_default(tmp_path, monkeypatch):
    ptx = tmp_path / "k.ptx"
    ptx.write_text(STORE_ONE)
    r = run("run", "--passes", "maxnreg_64", ptx)
    assert r.exit_code == 0 and ".maxnreg 64" in r.stdout, r.stderr
    patch_maxnreg(monkeypatch, append_bad_load)
    out = tmp_path / "out.ptx"
    r = run("run", "--passes", "maxnreg_64", "-o", out, ptx)
    assert r.exit_code == 1
    assert "ptxas rejects the output for sm_89" in r.stderr and "vector" in r.stderr.lower()
    assert not out.exists() and r.stdout == ""
    r = run("run", "--passes", "maxnreg_64", "--no-compile-check", ptx)
    assert r.exit_code == 0 and "ld.global.v2.u16" in r.stdout


def test_run_blames_an_input_ptxas_rejects_not_the_pass(tmp_path):
    ptx = tmp_path / "k.ptx"
    ptx.write_text(with_bad_load(STORE_ONE))
    r = run("run", "--passes", "maxnreg_64", ptx)
    assert r.exit_code == 2 and "rejects the input itself" in r.stderr
