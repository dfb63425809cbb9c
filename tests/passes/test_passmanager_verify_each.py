"""VerifyEach: the architecture comes from the module, a rejected input is the
input's problem, and every check names the launch contract it used."""

from pathlib import Path

import pytest

from ptxopt import parse
from ptxopt.equivalence.launch_contract import Contracts
from ptxopt.equivalence.launch import Launch, guessed
from ptxopt.kernels.corpus import get
from ptxopt.equivalence.instrument import VerifyEach
from ptxopt.passes.passmanager import InputRejected, PassManager
from ptxopt.equivalence.interpret import Geometry

DATA = Path(__file__).parents[1] / "data" / "contract"
SM90A = (DATA / "sm90a_setmaxnreg.ptx").read_text()
DYN = (DATA / "dyn_smem.ptx").read_text()


def test_arch_comes_from_the_module_target():
    """sm_90a-only PTX is compiled for its own target, never for sm_89 (where
    ptxas would reject it and the rejection would be blamed on vec_ld)."""
    ve = VerifyEach()
    res = PassManager("vec_ld", instruments=[ve]).run(parse(SM90A))
    assert res.changed and ve.resolved_arch == "sm_90a"
    [check] = ve.checks
    assert check.status == "proved" and check.launch.origin == "inferred"  # proved: no launch was needed
    assert "inferred from the PTX" in check.line()


def test_a_rejected_input_is_an_input_problem_not_the_first_pass():
    with pytest.raises(InputRejected) as e:
        PassManager("vec_ld", instruments=[VerifyEach("sm_89")]).run(parse(SM90A))
    msg = str(e.value)
    assert "before any pass" in msg and "sm_89" in msg and "vec_ld" not in msg
    assert "SM version" in msg  # ptxas' own words


def test_rejected_input_is_reported_even_when_no_pass_changes_anything():
    with pytest.raises(InputRejected):
        PassManager("", instruments=[VerifyEach("sm_89")]).run(parse(SM90A))


def test_a_launch_on_which_the_original_faults_is_inconclusive_not_silent():
    no_shared = Launch((1, 1, 1), (32, 1, 1), origin="options", source="options")  # dynamic shared not given
    ve = VerifyEach(prove=False, contract=no_shared)
    PassManager("vec_ld", instruments=[ve]).run(parse(DYN))
    [c] = ve.inconclusive
    assert c.entry == "dyn_smem" and c.launch.origin == "options"
    assert "equivalence not established" in c.line() and "out of bounds" in c.line()
    assert "launch: grid 1x1x1, block 32x1x1, 0 B dynamic shared (from options" in c.line()
    assert ve.skipped == [c.line()]


@pytest.mark.parametrize("contract", [
    Geometry(grid=(1, 1, 1), block=(32, 1, 1), shared_bytes=128, scalars={"dyn_smem_param_2": 32}),
    Contracts([Launch((1, 1, 1), (32, 1, 1), 128, {"dyn_smem_param_2": 32}, origin="contract", source="test",
                      entry="dyn_smem")]),
])
def test_a_contract_makes_the_check_conclusive(contract):
    ve = VerifyEach(contract=contract, prove=False)
    PassManager("vec_ld", instruments=[ve]).run(parse(DYN))
    [c] = ve.checks
    assert c.status == "equal" and c.trials >= 1
    assert "block 32x1x1, 128 B dynamic shared, dyn_smem_param_2=32" in c.line()
    j = ve.to_json()
    assert j["launches"]["dyn_smem"]["block"] == [32, 1, 1] and j["inconclusive"] == 0
    assert j["checks"][0]["launch"]["shared_bytes"] == 128


def test_the_prover_decides_first_and_a_guessed_launch_never_says_equal():
    """decide() goes cheap to expensive: vec_ld on DYN is proved for every
    launch (no run needed); without the prover, a launch inferred from the
    PTX that covers every output byte says 'equal', and a guessed launch on
    which both kernels run gives at most 'inconclusive (guessed launch)'."""
    ve = VerifyEach()
    PassManager("vec_ld", instruments=[ve]).run(parse(DYN))
    [c] = ve.checks
    assert c.status == "proved" and c.trials == 0 and not ve.inconclusive
    renamed = parse(get("gemm_tile_2x2x2").ptx_text().replace("gemm_tile_2x2x2", "renamed_tile"))
    ve = VerifyEach(prove=False)
    PassManager("reorder_cp", instruments=[ve]).run(renamed)
    [c] = ve.checks
    assert c.launch.origin == "inferred" and c.status == "equal" and "inferred from the PTX" in c.line()
    ve = VerifyEach(prove=False, contract=guessed())
    PassManager("reorder_cp", instruments=[ve]).run(renamed)
    [c] = ve.checks
    assert c.launch.guessed and c.status == "inconclusive" and "guessed launch" in c.line()


def test_corpus_kernels_name_their_manifest_entry():
    ve = VerifyEach()
    PassManager("cache_cg", instruments=[ve]).run(parse(get("gemm_tile_2x2x2").ptx_text()))
    assert ve.checks and all(c.launch.source == "corpus:gemm_tile_2x2x2" for c in ve.checks)
    assert ve.resolved_arch == "sm_89"


def test_a_contract_naming_parameters_the_kernel_lacks_is_an_input_error():
    bad = Launch(scalars={"nope": 1}, origin="contract", source="k.contract.json", params=("nope",))
    with pytest.raises(InputRejected, match="no parameter nope"):
        PassManager("vec_ld", instruments=[VerifyEach(contract=bad)]).run(parse(DYN))
