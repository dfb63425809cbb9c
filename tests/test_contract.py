"""Launch contracts: options and contract files -> how to launch a kernel."""

import json

import pytest

from ptxopt.equivalence.contract import (
    ContractError,
    contract_path_for,
    load_contract_file,
    parse_dim3,
    parse_scalars,
    resolve_contracts,
)


def test_option_parsing():
    assert parse_dim3("128", "--block") == (128, 1, 1)
    assert parse_dim3("4x2", "--grid") == (4, 2, 1)
    assert parse_dim3("1,2,3") == (1, 2, 3)
    with pytest.raises(ContractError, match="--block"):
        parse_dim3("0", "--block")
    with pytest.raises(ContractError):
        parse_dim3("a,b")
    assert parse_scalars(["n=0x10", "alpha=0.5"]) == {"n": 16, "alpha": 0.5}
    with pytest.raises(ContractError, match="NAME=VALUE"):
        parse_scalars(["n"])
    with pytest.raises(ContractError, match="not a number"):
        parse_scalars(["n=lots"])


def test_contract_path_sits_next_to_the_ptx(tmp_path):
    assert contract_path_for(tmp_path / "k.ptx") == tmp_path / "k.contract.json"
    assert contract_path_for("dir/k") == __import__("pathlib").Path("dir/k.contract.json")


def test_manifest_entry_shaped_file_with_scalars_only_gives_a_geometry(tmp_path):
    f = tmp_path / "k.contract.json"
    f.write_text(json.dumps({"entry": "k", "launch": {"grid": [2, 1, 1], "block": [64, 1, 1],
                                                      "shared_bytes": 256},
                             "params": [{"name": "k_param_2", "role": "scalar", "dtype": "u32", "value": 128}]}))
    [c] = load_contract_file(f)
    assert c.entry == "k" and c.params == ("k_param_2",)
    c = c.fit(["k_param_0", "k_param_1", "k_param_2"])  # the file does not describe the buffers
    assert not c.exact and c.origin == "contract" and "geometry" in c.interp_kwargs()
    with pytest.raises(ContractError, match="no parameter k_param_2"):
        c.fit(["a", "b"])
    assert (c.grid, c.block, c.shared_bytes, c.scalars) == ((2, 1, 1), (64, 1, 1), 256, {"k_param_2": 128})
    assert "grid 2x1x1, block 64x1x1, 256 B dynamic shared, k_param_2=128 (from k.contract.json)" == c.describe()
    assert c.to_json()["buffers"] == "default"


def test_complete_params_give_exact_buffers(tmp_path):
    f = tmp_path / "k.contract.json"
    f.write_text(json.dumps({"launch": {"grid": [1, 1, 1], "block": [32, 1, 1]}, "params": [
        {"name": "a", "role": "input", "dtype": "f16", "count": 64},
        {"name": "n", "role": "scalar", "dtype": "u32", "value": "32"}]}))
    [c] = load_contract_file(f)
    c = c.fit(["a", "n"])
    spec = c.interp_kwargs()["spec"]
    assert c.exact and spec.params[0].dtype == "f16" and spec.params[1].value == 32
    assert c.to_json()["buffers"] == "exact"


@pytest.mark.parametrize("doc,msg", [
    ({"params": []}, "launch"),
    ({"launch": {"grid": [0], "block": [1]}}, "launch.grid"),
    ({"launch": {"grid": [1], "block": [1]}, "params": [{"role": "scalar"}]}, "name"),
    ({"launch": {"grid": [1], "block": [1]}, "params": [{"name": "n", "role": "scalar"}]}, "value"),
    ({"launch": {"grid": [1], "block": [1]}, "params": [{"name": "n", "role": "wat", "value": 1}]}, "role"),
    ([{"launch": {"grid": [1], "block": [1]}}, {"launch": {"grid": [1], "block": [1]}}], "entry"),
])
def test_malformed_files_say_what_is_wrong(tmp_path, doc, msg):
    f = tmp_path / "k.contract.json"
    f.write_text(json.dumps(doc))
    with pytest.raises(ContractError, match=msg):
        load_contract_file(f)
    f.write_text("{")
    with pytest.raises(ContractError, match="invalid JSON"):
        load_contract_file(f)


def test_resolution_file_is_found_automatically_and_options_override_fields(tmp_path):
    ptx = tmp_path / "k.ptx"
    ptx.write_text("")
    assert not resolve_contracts(str(ptx))
    (tmp_path / "k.contract.json").write_text(json.dumps(
        {"launch": {"grid": [1, 1, 1], "block": [32, 1, 1], "shared_bytes": 128},
         "params": [{"name": "n", "role": "scalar", "value": 32}]}))
    c = resolve_contracts(str(ptx)).for_entry("k")
    assert c.entry == "k" and c.block == (32, 1, 1) and c.source == "k.contract.json"
    c = resolve_contracts(str(ptx), block="64", scalars=["n=64"]).for_entry("k")
    assert c.block == (64, 1, 1) and c.scalars == {"n": 64} and c.shared_bytes == 128
    assert c.source == "k.contract.json + options"
    assert not resolve_contracts(str(ptx), auto=False)
    c = resolve_contracts("corpus:x", grid="2", block="3", shared_bytes=4).for_entry("e")
    assert (c.grid, c.block, c.shared_bytes, c.source) == ((2, 1, 1), (3, 1, 1), 4, "options")
    with pytest.raises(ContractError, match="both --grid and --block"):
        resolve_contracts("-", scalars=["n=1"])


def test_a_scalar_the_entry_lacks_is_an_error_of_the_contract_itself():
    """Checked in Launch.fit, so every command refuses it (run --verify-each
    used to accept --scalar nosuch=1 and report 'verified')."""
    from ptxopt.equivalence.contract import ContractError
    from ptxopt.equivalence.launch import Launch

    c = Launch(scalars={"nosuch": 1}, origin="options", source="options")
    with pytest.raises(ContractError, match="no parameter nosuch"):
        c.fit(["p", "n"])
    assert Launch(scalars={"n": 3}, origin="options").fit(["p", "n"]).scalars == {"n": 3}
