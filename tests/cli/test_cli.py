"""The CLI commands, run through click's test runner."""

import json

from click.testing import CliRunner

from ptxopt.cli import cli


def run(*args):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def test_parse_reports_functions():
    r = run("parse", "corpus:gemm_tile_2x2x2", "--json")
    assert r.exit_code == 0, r.output
    d = json.loads(r.output)
    assert d["version"] == "8.8" and d["target"] == ["sm_89"]
    (f,) = d["functions"]
    assert f["name"] == "gemm_tile_2x2x2" and f["kind"] == "entry" and f["params"] == 3
    # 2*2*2 fma + 8 loads + 4 stores + 4 movs + 3 ld.param + 3 cvta + ret
    assert f["instructions"] == 8 + 8 + 4 + 4 + 3 + 3 + 1


def test_parse_emit_is_canonical_ptx(tmp_path):
    r = run("parse", "corpus:cuda_vector_add", "--emit")
    assert r.exit_code == 0
    p = tmp_path / "x.ptx"
    p.write_text(r.output)
    again = run("parse", str(p), "--emit")
    assert again.output == r.output


def test_syntax_error_location_and_exit_code(tmp_path):
    p = tmp_path / "bad.ptx"
    p.write_text(".version 8.8\n.target sm_89\n.entry k()\n{\n\tadd.s32 %r1, %r2 %r3;\n}\n")
    r = CliRunner().invoke(cli, ["parse", str(p)])
    assert r.exit_code == 2
    assert f"{p}:5:19: error: expected one of ',', ';', '|', found '%r3'" in r.output


def test_unknown_corpus_id_is_a_clean_error():
    r = CliRunner().invoke(cli, ["parse", "corpus:no_such_kernel"])
    assert r.exit_code == 2
    assert r.output.startswith("ptxopt: error:")


def test_compile_json_reports_resources():
    r = run("compile", "corpus:gemm_tile_4x4x4", "--json", "--sass")
    assert r.exit_code == 0, r.output
    d = json.loads(r.output)
    k = d["kernels"]["gemm_tile_4x4x4"]
    assert 0 < k["registers"] <= 255 and k["spill_store_bytes"] == 0
    assert d["ptxas_version"].startswith("12.") and d["sass_instructions"] == len(d["sass"])
    assert sum(1 for i in d["sass"] if i["text"].startswith("FFMA")) == 64


def test_compile_ptxas_error_exit_2(tmp_path):
    p = tmp_path / "undeclared.ptx"
    p.write_text(".version 8.8\n.target sm_89\n.address_size 64\n.entry k()\n{\n\tmov.u32 %r1, 1;\n\tret;\n}\n")
    r = CliRunner().invoke(cli, ["compile", str(p)])
    assert r.exit_code == 2
    assert "line 6" in r.output


def test_roundtrip_json():
    r = run("roundtrip", "corpus:gemm_tile_2x2x2", "corpus:triton_vector_add", "--json", "-j", "1")
    assert r.exit_code == 0, r.output
    d = json.loads(r.output)
    assert d["passed"] == 2 and d["failed"] == 0
    assert all(a["status"] == "same" for k in d["kernels"] for a in k["archs"])


def test_roundtrip_fails_on_unparsable_file(tmp_path):
    p = tmp_path / "bad.ptx"
    p.write_text(".version 8.8\n")
    r = CliRunner().invoke(cli, ["roundtrip", str(p), "--no-sass", "-j", "1"])
    assert r.exit_code == 1
    assert "FAIL" in r.output and "0 passed, 1 failed" in r.output


def test_corpus_list_filters():
    r = run("corpus", "list", "--family", "triton", "--json")
    d = json.loads(r.output)
    assert d and all(k["compiler"] == "triton" for k in d)
    # the performance launch beside the check launch, never in its place
    va = next(k for k in d if k["id"] == "triton_vector_add")
    assert (va["grid"], va["performance"]["grid"], va["performance"]["block"]) == (
        [4, 1, 1], [65536, 1, 1], [128, 1, 1])
    r = run("corpus", "list", "--family", "gemm_tile", "--json")
    d = json.loads(r.output)
    assert len(d) == 68 and all(k["performance"] is None for k in d)


def test_every_command_has_help():
    for cmd in (["--help"], ["parse", "--help"], ["stats", "--help"], ["compile", "--help"],
                ["roundtrip", "--help"], ["corpus", "list", "--help"]):
        r = run(*cmd)
        assert r.exit_code == 0 and "Usage:" in r.output


def test_stats_json_counts_fma_and_loads():
    r = run("stats", "corpus:gemm_tile_4x4x4", "--json")
    assert r.exit_code == 0, r.output
    e = json.loads(r.output)["entries"]["gemm_tile_4x4x4"]
    assert e["blocks"] == 1 and not e["has_loop"]
    assert e["features"]["n_fma"] == 64
    assert e["dag"]["nodes_max"] == e["instructions"]


def test_stats_lists_the_parameters_a_launch_names():
    """The names a contract's scalars must use, as the PTX declares them (nvcc's NAME_param_N)."""
    r = run("stats", "corpus:gemm_tile_4x4x4", "--json")
    e = json.loads(r.output)["entries"]["gemm_tile_4x4x4"]
    from ptxopt.kernels.corpus import corpus_file, get
    from ptxopt.ptx.parser import parse

    fn = next(iter(parse(corpus_file(get("gemm_tile_4x4x4").path).read_text()).entries))
    assert [p["name"] for p in e["parameters"]] == fn.param_names() != []
    assert all(p["type"] for p in e["parameters"])
    r = run("stats", "corpus:gemm_tile_4x4x4")
    assert e["parameters"][0]["name"] in r.output


def test_stats_table_runs():
    r = run("stats", "corpus:cuda_softmax_row")
    assert r.exit_code == 0 and "has a loop" in r.output
