"""Input limits: JSON nested past the limit is bad input with its
position, a UTF-8 byte-order mark is accepted, a pipeline has a length cap,
and the library's entry points say what type they take."""

from __future__ import annotations

import json

import pytest
from cli_helpers import run_cli as run

import ptxopt
from ptxopt.support import jsontext
from ptxopt.evaluate import Candidate
from ptxopt.passes.pipeline import MAX_PASSES, Pipeline, PipelineError

DEEP = "[" * 100_000 + "]" * 100_000


def test_the_depth_error_points_at_the_first_level_past_the_limit():
    text = "{\n" + '"a": ' + "[" * (jsontext.MAX_DEPTH + 5) + "]" * (jsontext.MAX_DEPTH + 5) + "\n}"
    with pytest.raises(jsontext.NestedTooDeeply) as err:
        jsontext.loads(text)
    e = err.value
    assert e.lineno == 2 and e.colno == 5 + jsontext.MAX_DEPTH  # { is level 1: the 64th [ after "a": is 65
    assert "nested too deeply" in str(e)
    assert jsontext.loads('["[[[[" , {"k": "]]]"}]') == ["[[[[", {"k": "]]]"}]  # brackets in strings do not count
    assert jsontext.loads(b"\xef\xbb\xbf{\"a\": 1}") == {"a": 1}
    assert jsontext.loads("[" * jsontext.MAX_DEPTH + "]" * jsontext.MAX_DEPTH)


def test_a_deep_contract_is_bad_input(tmp_path):
    ptx = tmp_path / "k.ptx"
    ptx.write_text(Candidate.from_corpus("gemm_tile_2x2x2", "").ptx)
    contract = tmp_path / "c.json"
    contract.write_text(DEEP)
    r = run("eval", ptx, "--contract", contract, "--no-cache")
    assert r.exit_code == 2, r.output
    assert "nested too deeply" in r.stderr and "line 1 column 65" in r.stderr and "Traceback" not in r.stderr


def test_a_contract_with_a_byte_order_mark_is_read(tmp_path):
    from ptxopt.equivalence.launch_contract import load_contract_file

    c = tmp_path / "c.json"
    c.write_bytes(b"\xef\xbb\xbf" + json.dumps({"grid": [1, 1, 1], "block": [1, 1, 1]}).encode())
    [launch] = load_contract_file(c)
    assert launch.block == (1, 1, 1)


def test_deep_trajectories_and_pipelines_files_are_bad_input(tmp_path):
    from ptxopt.search.trajectory import read_jsonl
    from ptxopt.triton.pipelines import PipelinesError, read_pipelines

    t = tmp_path / "t.jsonl"
    t.write_text(DEEP + "\n")
    with pytest.raises(ValueError, match=r"t.jsonl:1: bad trajectory record: nested too deeply"):
        list(read_jsonl(t))
    p = tmp_path / "p.json"
    p.write_text(DEEP)
    with pytest.raises(PipelinesError, match="nested too deeply"):
        read_pipelines(p)


def test_a_deep_triton_metadata_file_is_skipped_with_a_warning(tmp_path):
    from test_triton_tune import fake_entry

    from ptxopt.triton.cache_dir import scan

    fake_entry(tmp_path, "AAAA", "vector_add", "vector_add.ptx")
    d = fake_entry(tmp_path, "BBBB", "relu_scale", "relu_scale.ptx")
    (d / "relu_scale.json").write_text(DEEP)
    kernels, skipped = scan(tmp_path)
    assert [k.name for k in kernels] == ["vector_add"]
    assert any("relu_scale.json" in s and "nested too deeply" in s for s in skipped)


def test_a_pipeline_has_a_length_cap():
    Pipeline.parse(",".join(["vec_ld"] * 2))
    with pytest.raises(PipelineError, match=f"at most {MAX_PASSES}"):
        Pipeline.parse(",".join(["cache_ca"] * 100_000))
    r = run("run", "corpus:gemm_tile_2x2x2", "--passes", ",".join(["cache_ca"] * 1000))
    assert r.exit_code == 2 and f"at most {MAX_PASSES}" in r.stderr


@pytest.mark.parametrize("call, words", [
    (lambda: ptxopt.optimize(None, "vec_ld"), "optimize() takes the PTX text as str, not NoneType"),
    (lambda: ptxopt.optimize(b".version 8.8", "vec_ld"), "not bytes; decode it first"),
    (lambda: ptxopt.optimize(".version 8.8", 3), "optimize() takes the pipeline as a str"),
    (lambda: ptxopt.parse(None), "parse() takes the PTX text as str, not NoneType"),
    (lambda: ptxopt.parse_bytes(None), "parse_bytes() takes bytes, not NoneType"),
    (lambda: Pipeline.parse(None), "Pipeline.parse() takes a str"),
])
def test_the_library_says_what_type_it_takes(call, words):
    with pytest.raises(TypeError, match=words.replace("(", r"\(").replace(")", r"\)")):
        call()


def test_ptx_nested_too_deeply_is_reported_where_the_limit_is_passed():
    """Blocks reduce innermost first, so the error names the line where the limit is passed, not one 100 levels above it."""
    from ptxopt.ptx.parser import MAX_NESTING, ParseError

    n = 20_000
    head = ".version 8.8\n.target sm_89\n.address_size 64\n\n.visible .entry k()\n{\n"  # the body: line 6
    text = head + "// { not a block\n" + "{\n" * n + "}\n" * n + "ret;\n}\n"
    with pytest.raises(ParseError) as err:
        ptxopt.parse(text)
    assert "nested deeper than" in err.value.message
    assert (err.value.line, err.value.column) == (7 + MAX_NESTING, 1)  # the brace that opens level MAX_NESTING + 1


@pytest.mark.parametrize("call, words", [
    (lambda: __import__("ptxopt.evaluate", fromlist=["evaluate"]).evaluate(None), "Candidate() takes the PTX text"),
    (lambda: Candidate(".version 8.8", pipeline=3), "Candidate() takes the pipeline as a str"),
    (lambda: ptxopt.emit(None), "emit() takes a Module"),
])
def test_the_evaluator_and_printer_say_what_type_they_take(call, words):
    with pytest.raises(TypeError, match=words.replace("(", r"\(").replace(")", r"\)")):
        call()
