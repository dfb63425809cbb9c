"""VerifyEach: the architecture comes from the module, a rejected input is the
input's problem, and every check names the launch contract it used."""

from pathlib import Path

import pytest

from ptxopt import parse
from ptxopt.contract import Contract, Contracts
from ptxopt.corpus import get
from ptxopt.passmanager import InputRejected, PassManager, VerifyEach
from ptxopt.verify import Geometry

DATA = Path(__file__).parent / "data" / "contract"
SM90A = (DATA / "sm90a_setmaxnreg.ptx").read_text()
DYN = (DATA / "dyn_smem.ptx").read_text()


def test_arch_comes_from_the_module_target():
    """sm_90a-only PTX used to be compiled for sm_89, and the rejection was
    blamed on vec_ld."""
    ve = VerifyEach()
    res = PassManager("vec_ld", instruments=[ve]).run(parse(SM90A))
    assert res.changed and ve.resolved_arch == "sm_90a"
    [check] = ve.checks
    assert check.status == "equal" and check.contract.guessed
    assert "guessed" in check.line()


def test_a_rejected_input_is_an_input_problem_not_the_first_pass():
    with pytest.raises(InputRejected) as e:
        PassManager("vec_ld", instruments=[VerifyEach("sm_89")]).run(parse(SM90A))
    msg = str(e.value)
    assert "before any pass" in msg and "sm_89" in msg and "vec_ld" not in msg
    assert "SM version" in msg  # ptxas' own words


def test_rejected_input_is_reported_even_when_no_pass_changes_anything():
    with pytest.raises(InputRejected):
        PassManager("", instruments=[VerifyEach("sm_89")]).run(parse(SM90A))


def test_guessed_launch_that_faults_is_inconclusive_not_silent():
    ve = VerifyEach()
    PassManager("vec_ld", instruments=[ve]).run(parse(DYN))
    [c] = ve.inconclusive
    assert c.entry == "dyn_smem" and c.contract.guessed
    assert "equivalence not checked" in c.line() and "out of bounds" in c.line()
    assert "contract: grid 1x1x1, block 1x1x1, 0 B dynamic shared (guessed" in c.line()
    assert ve.skipped == [c.line()]


@pytest.mark.parametrize("contract", [
    Geometry(grid=(1, 1, 1), block=(32, 1, 1), shared_bytes=128, scalars={"dyn_smem_param_2": 32}),
    Contracts([Contract("test", geometry=Geometry(grid=(1, 1, 1), block=(32, 1, 1), shared_bytes=128,
                                                  scalars={"dyn_smem_param_2": 32}), entry="dyn_smem")]),
])
def test_a_contract_makes_the_check_conclusive(contract):
    ve = VerifyEach(contract=contract)
    PassManager("vec_ld", instruments=[ve]).run(parse(DYN))
    [c] = ve.checks
    assert c.status == "equal" and c.trials >= 1
    assert "block 32x1x1, 128 B dynamic shared, dyn_smem_param_2=32" in c.line()
    j = ve.to_json()
    assert j["contracts"]["dyn_smem"]["block"] == [32, 1, 1] and j["inconclusive"] == 0
    assert j["checks"][0]["contract"]["shared_bytes"] == 128


def test_corpus_kernels_name_their_manifest_entry():
    ve = VerifyEach()
    PassManager("cache_cg", instruments=[ve]).run(parse(get("gemm_tile_2x2x2").ptx_text()))
    assert ve.checks and all(c.contract.source == "corpus:gemm_tile_2x2x2" for c in ve.checks)
    assert ve.resolved_arch == "sm_89"


def test_a_contract_naming_parameters_the_kernel_lacks_is_an_input_error():
    bad = Contract("k.contract.json", geometry=Geometry(scalars={"nope": 1}), params=("nope",))
    with pytest.raises(InputRejected, match="no parameter nope"):
        PassManager("vec_ld", instruments=[VerifyEach(contract=bad)]).run(parse(DYN))
