"""Launch contracts: options and contract files -> how to launch a kernel."""

import json

import pytest

from ptxopt.equivalence.launch_contract import (
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
    too: --scalar nosuch=1 must never be ignored and reported 'verified')."""
    from ptxopt.equivalence.launch_contract import ContractError
    from ptxopt.equivalence.launch import Launch

    c = Launch(scalars={"nosuch": 1}, origin="options", source="options")
    with pytest.raises(ContractError, match="no parameter nosuch"):
        c.fit(["p", "n"])
    assert Launch(scalars={"n": 3}, origin="options").fit(["p", "n"]).scalars == {"n": 3}


# -- the performance launch (what the user runs; never the check launch) ----------

PERF_PTX = """.version 8.8
.target sm_89
.address_size 64
.visible .entry k(.param .u64 k_param_0, .param .u32 k_param_1) .reqntid 128, 1, 1
{
ret;
}
"""


def _perf_file(tmp_path, doc, name="k.contract.json"):
    f = tmp_path / name
    f.write_text(json.dumps(doc))
    return f


def test_a_contract_performance_entry_is_a_performance_launch_kept_apart_from_the_check_one(tmp_path):
    from ptxopt.equivalence.launch_contract import load_performance_file, performance_from_json
    from ptxopt.equivalence.launch import Origin, Role

    f = _perf_file(tmp_path, {"entry": "k", "launch": {"grid": [2], "block": [128]},
                              "performance": {"grid": [4096], "block": [128], "shared_bytes": 1024,
                                              "scalars": {"k_param_1": 1 << 20}, "problem": "2^20 floats"}})
    [check] = load_contract_file(f)
    [perf] = load_performance_file(f)
    assert (check.role, check.grid) == (Role.CHECK, (2, 1, 1))
    assert (perf.role, perf.origin, perf.entry, perf.source) == (Role.PERFORMANCE, Origin.CONTRACT, "k",
                                                                 "k.contract.json")
    assert (perf.grid, perf.block, perf.shared_bytes, perf.scalars) == ((4096, 1, 1), (128, 1, 1), 1024,
                                                                        {"k_param_1": 1 << 20})
    assert perf.describe().startswith("performance launch: grid 4096x1x1, block 128x1x1, 1024 B")
    assert performance_from_json({"launch": {"grid": [1], "block": [1]}}, "x") is None
    # only a performance launch: no check launch from the file, and no error
    f = _perf_file(tmp_path, {"performance": {"block": [128]}})
    assert load_contract_file(f) == [] and not resolve_contracts(str(f), contract_file=str(f))
    [perf] = load_performance_file(f)
    assert perf.grid is None and perf.blocks is None and "grid unknown" in perf.describe()


@pytest.mark.parametrize("perf,message", [
    ({"grid": [8]}, "needs {\"block\""),
    ([128], "needs {\"block\""),
    ({"block": [0]}, "performance.block"),
    ({"block": [64, 32]}, "performance.block \\[64, 32, 1\\] has 2048 threads; a block has at most 1024"),
    ({"block": [128], "grid": [1, 0]}, "performance.grid"),
    ({"block": [128], "shared_bytes": -1}, "performance.shared_bytes"),
    ({"block": [128], "scalars": ["n=1"]}, "performance.scalars must be an object"),
    ({"block": [128], "scalars": {"n": "lots"}}, "not a number"),
    ({"block": [128], "shared": 16}, "unknown key 'shared'"),
    ({"block": [128], "counts": {"k_param_0": -1}}, "performance.counts must be an object"),
])
def test_malformed_performance_entries_say_what_is_wrong(tmp_path, perf, message):
    from ptxopt.equivalence.launch_contract import load_performance_file

    f = _perf_file(tmp_path, {"launch": {"grid": [1], "block": [1]}, "performance": perf})
    with pytest.raises(ContractError, match=f"^k.contract.json: .*{message}"):
        load_performance_file(f)


def test_resolve_performance_file_options_and_base(tmp_path):
    from ptxopt.equivalence.launch_contract import resolve_performance
    from ptxopt.equivalence.launch import Launch, Origin, Role

    ptx = tmp_path / "k.ptx"
    ptx.write_text(PERF_PTX)
    assert resolve_performance(str(ptx)) is None
    # options alone: --perf-block is needed, the grid may stay unknown
    p = resolve_performance(str(ptx), block="128", scalars=["k_param_1=64"])
    assert (p.origin, p.role, p.grid, p.block, p.scalars, p.source) == (
        Origin.OPTIONS, Role.PERFORMANCE, None, (128, 1, 1), {"k_param_1": 64}, "options")
    with pytest.raises(ContractError, match="need the block size: give --perf-block"):
        resolve_performance(str(ptx), grid="8")
    with pytest.raises(ContractError, match="--perf-scalar wants NAME=VALUE"):
        resolve_performance(str(ptx), block="128", scalars=["k_param_1"])
    with pytest.raises(ContractError, match="--perf-block"):
        resolve_performance(str(ptx), block="0")
    with pytest.raises(ContractError, match="at most 1024"):
        resolve_performance(str(ptx), block="32,64")
    # KERNEL.contract.json next to the PTX, found automatically; options override single fields
    _perf_file(tmp_path, {"performance": {"grid": [64], "block": [128], "scalars": {"k_param_1": 8192}}})
    p = resolve_performance(str(ptx), entry="k")
    assert (p.grid, p.origin, p.entry, p.source) == ((64, 1, 1), Origin.CONTRACT, "k", "k.contract.json")
    p = resolve_performance(str(ptx), grid="128", shared_bytes=16)
    assert (p.grid, p.block, p.shared_bytes, p.scalars) == ((128, 1, 1), (128, 1, 1), 16, {"k_param_1": 8192})
    assert p.source == "k.contract.json + options" and p.role is Role.PERFORMANCE
    assert resolve_performance(str(ptx), auto=False) is None
    # a base (the corpus manifest's) when no file gives one
    base = Launch((9, 1, 1), (64, 1, 1), 0, {"n": 1}, origin=Origin.MANIFEST, role=Role.PERFORMANCE,
                  source="corpus:x performance")
    assert resolve_performance("corpus:x", base=base) is base
    p = resolve_performance("corpus:x", base=base, scalars=["n=5"])
    assert (p.grid, p.scalars, p.source) == ((9, 1, 1), {"n": 5}, "corpus:x performance + options")
    # several entries: each names its own
    f = _perf_file(tmp_path, [{"entry": "a", "performance": {"block": [32]}},
                              {"entry": "b", "performance": {"block": [64]}}], "two.json")
    assert resolve_performance(contract_file=str(f), entry="b").block == (64, 1, 1)
    assert resolve_performance(contract_file=str(f), entry="c") is None
    with pytest.raises(ContractError, match="several entries"):
        resolve_performance(contract_file=str(f))


def test_check_performance_refuses_a_launch_no_gpu_runs():
    from ptxopt.equivalence.launch_contract import check_performance
    from ptxopt.equivalence.launch import Launch, Role
    from ptxopt.ptx.parser import parse

    [fn] = parse(PERF_PTX).entries
    ok = Launch(None, (128, 1, 1), 0, {"k_param_1": 3}, origin="options", role=Role.PERFORMANCE, source="options")
    assert check_performance(ok, fn).entry == "k"
    for bad, message in [((64, 1, 1), "is not the entry's .reqntid"), ((128, 1, 1), "no parameter n")]:
        launch = Launch(None, bad, 0, {"n": 1} if message.endswith("n") else {}, origin="options",
                        role=Role.PERFORMANCE, source="options")
        with pytest.raises(ContractError, match=message):
            check_performance(launch, fn)


def test_only_a_performance_launch_may_leave_its_grid_unknown():
    from ptxopt.equivalence.launch import Launch, Role

    with pytest.raises(ValueError, match="only a performance launch"):
        Launch(None, (32, 1, 1))
    p = Launch(None, (32, 1, 1), role=Role.PERFORMANCE, origin="options")
    assert p.to_json()["grid"] is None and "None" in p.key()
    with pytest.raises(ContractError, match="no grid"):
        p.interp_kwargs()
