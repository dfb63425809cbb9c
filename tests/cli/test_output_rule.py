"""One rule for outputs (ptxopt.cli.output_rule): no output path may be an
input, the evaluation cache, the move memo or the Triton hook's store --
whatever the command and option, and however the path reaches the
protected file (the same name, a symlink, a hard link). Refused with exit 2
before any work, the protected file byte for byte as it was.

Table-driven: each row is a command line whose output names something it
must not overwrite."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from ptxopt.cli import cli
from ptxopt.kernels.corpus import get


@pytest.fixture
def world(tmp_path, monkeypatch):
    """A kernel file, a folder of kernels, a real evaluation cache with its
    move memo, and the Triton store under $PTXOPT_CACHE's folder."""
    from ptxopt.evaluate.cache import EvalCache

    text = get("gemm_tile_2x2x2").ptx_text()
    k = tmp_path / "k.ptx"
    k.write_text(text)
    d = tmp_path / "src"
    (d / "sub").mkdir(parents=True)
    (d / "a.ptx").write_text(text)
    (d / "sub" / "b.ptx").write_text(text)
    cache = tmp_path / "cache" / "eval.sqlite"
    cache.parent.mkdir()
    EvalCache(cache).close()
    Path(str(cache) + ".moves.sqlite").write_bytes(b"memo")
    store = cache.parent / "triton-hook"
    store.mkdir()
    (store / "x.json").write_text("{}")
    os.symlink(k, tmp_path / "link.json")
    os.link(k, tmp_path / "hard.json")
    traj = tmp_path / "t.jsonl"
    traj.write_bytes((Path(__file__).resolve().parents[2] / "corpus" / "trajectories" / "greedy_sm_89.jsonl")
                     .read_bytes()[:20000].rsplit(b"\n", 1)[0] + b"\n")  # a real (short) trajectory file
    monkeypatch.setenv("PTXOPT_CACHE", str(cache))
    from test_triton_tune import fake_entry

    tc = tmp_path / "triton"
    fake_entry(tc, "AAAA", "vector_add", "vector_add.ptx")
    return {"TC": tc, "K": k, "D": d, "C": cache, "M": Path(str(cache) + ".moves.sqlite"), "S": store, "T": traj,
            "L": tmp_path / "link.json", "H": tmp_path / "hard.json", "O": tmp_path / "o"}


#: (command line, the protected file that must stay as it was)
ROWS = [
    ("search {K} --cache {C} --json-out {C}", "C"),
    ("search {K} --cache {C} --json-out {M}", "M"),
    ("search {K} --json-out {C}", "C"),  # the default cache ($PTXOPT_CACHE)
    ("search {K} --cache {C} --json-out {K}", "K"),
    ("search {K} --cache {C} --record {K}", "K"),
    ("search {K} --cache {C} --plot {K}", "K"),
    ("search {K} --cache {C} --json {H}", "K"),  # the deprecated --json FILE
    ("search {K} --cache {C} --json-out {L}", "K"),  # a symlink to the input
    ("search {K} --cache {C} --json-out {H}", "K"),  # a hard link to the input
    ("search {K} --cache {C} --record {H}", "K"),
    ("search {D} --cache {C} --json-out {D}/sub/b.ptx", "D/sub/b.ptx"),
    ("search {D} --cache {C} --emit {D}", "D/a.ptx"),  # emit over the sources
    ("search {K} --cache {C} --emit {K_dir}", "K"),
    ("search {K} --cache {C} --json-out {S}/x.json", "S/x.json"),
    ("search {TC} --cache {C} --pipelines-out {TC}/AAAA/vector_add.json", "TC/AAAA/vector_add.json"),
    ("search {TC} --cache {C} --emit {TC}/AAAA", "TC/AAAA/vector_add.ptx"),
    ("eval {K} --cache {C} --json-out {K}", "K"),
    ("eval {K} --cache {C} --json-out {C}", "C"),
    ("verify {K} {K} --json-out {K}", "K"),
    ("explain {K} --plot {K}", "K"),
    ("explain {K} --json-out {H}", "K"),
    ("stats {K} --json-out {K}", "K"),
    ("parse {K} --json-out {L}", "K"),
    ("compile {K} -o {K}", "K"),
    ("compile {K} -o {C}", "C"),
    ("run {K} -p maxnreg_128 --json-out {K}", "K"),
    ("run {K} -p maxnreg_128 -o {C}", "C"),
    ("roundtrip {D} --json-out {D}/a.ptx", "D/a.ptx"),
    ("passes --json-out {C}", "C"),
    ("train --bc-only --trajectories {T} --out {T_dir} --json-out {O}", "T"),
]


def _args(line: str, w: dict) -> list[str]:
    subs = {f"{{{k}}}": str(v) for k, v in w.items()}
    subs["{K_dir}"], subs["{T_dir}"] = str(w["K"].parent), str(w["T"].parent)
    out = []
    for word in line.split():
        for key, value in subs.items():
            word = word.replace(key, value)
        out.append(word)
    return out


def _protected(name: str, w: dict) -> Path:
    head, _, tail = name.partition("/")
    return w[head] / tail if tail else w[head]


@pytest.mark.parametrize("line,kept", ROWS, ids=[r[0] for r in ROWS])
def test_an_output_never_overwrites_an_input_the_cache_or_a_store(world, line, kept):
    if line.startswith("train"):
        # train writes train.json into --out: make the trajectory file be that file
        world["T"].rename(world["T"].with_name("train.json"))
        world["T"] = world["T"].with_name("train.json")
    path = _protected(kept, world)
    before = path.read_bytes()
    r = CliRunner().invoke(cli, _args(line, world))
    assert r.exit_code == 2, r.output
    assert "an output never overwrites" in r.output and "Traceback" not in r.output
    assert path.read_bytes() == before
    assert "internal error" not in r.output


def test_two_outputs_may_not_name_one_file(world):
    r = CliRunner().invoke(cli, ["search", str(world["K"]), "--cache", str(world["C"]), "--record",
                                 str(world["O"]), "--json-out", str(world["O"])])
    assert r.exit_code == 2 and "same file" in r.output


def test_run_in_place_stays_allowed(world):
    """``run FILE -o FILE``: the one output that may be its input, written after the ptxas check."""
    k = world["K"]
    expected = CliRunner().invoke(cli, ["run", str(k), "-p", "maxnreg_128"]).stdout
    r = CliRunner().invoke(cli, ["run", str(k), "-p", "maxnreg_128", "-o", str(k)])
    assert r.exit_code == 0, r.output
    assert k.read_text() == expected and ".maxnreg 128" in expected


def test_collision_compares_resolved_paths_and_inodes(tmp_path):
    from ptxopt.support.outputs import collision

    f = tmp_path / "f"
    f.write_text("x")
    os.symlink(f, tmp_path / "s")
    os.link(f, tmp_path / "h")
    (tmp_path / "dir").mkdir()
    protected = [("the input", f, False), ("the store", tmp_path / "dir", True)]
    assert collision(tmp_path / "s", protected) == "the input"
    assert collision(tmp_path / "h", protected) == "the input"
    assert collision(tmp_path / "dir" / ".." / "f", protected) == "the input"
    assert collision(tmp_path / "dir" / "new" / "x.json", protected) == "the store"
    assert collision(tmp_path / "other", protected) is None
