"""``ptxopt apply MANIFEST SRC_DIR OUT_DIR`` takes its manifest as input:
a damaged field is refused naming it (exit 2, never an internal error);
sources are read only inside SRC_DIR (an old manifest's absolute path by
its file name there); an OUT_DIR that would overwrite a source is refused
before anything is written.

The manifests are written here as ``search --emit`` writes them (a
register-budget pipeline: no search runs)."""

from __future__ import annotations

import copy
import hashlib
import json
import os

import pytest
from click.testing import CliRunner

from ptxopt.cli import cli
from ptxopt.kernels.corpus import get
from ptxopt.ptx.emit import emit
from ptxopt.ptx.parser import parse


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


PIPELINE = "maxnreg_128"  # changes the text: an apply over the source would replace it


def _entry(name: str, source: str, text: str) -> dict:
    from ptxopt.passes.passmanager import PassManager
    from ptxopt.passes.pipeline import Pipeline

    stem = name.removesuffix(".ptx")
    canonical = emit(PassManager(Pipeline.parse(PIPELINE)).run(parse(text)).module)
    assert canonical != emit(parse(text))
    return {"kernel": name, "source": source, "source_sha256": _sha(text), "pipeline": PIPELINE,
            "verdict": "hints-only", "arch": "sm_89", "error": None, "ptx": stem + ".ptx", "cubin": stem + ".cubin",
            "evaluated_sha256": _sha(canonical)}


@pytest.fixture
def shipped(tmp_path):
    """SRC_DIR with k.ptx and its manifest (source recorded relative)."""
    text = get("gemm_tile_2x2x2").ptx_text()
    src = tmp_path / "src"
    src.mkdir()
    (src / "k.ptx").write_text(text)
    doc = {"schema": 1, "tool": "ptxopt search", "kernels": [_entry("k.ptx", "k.ptx", text)]}
    man = tmp_path / "manifest.json"
    man.write_text(json.dumps(doc))
    return {"src": src, "man": man, "doc": doc, "text": text, "tmp": tmp_path}


def _apply(man, src, out):
    return CliRunner().invoke(cli, ["apply", str(man), str(src), str(out)])


def test_a_good_manifest_is_applied(shipped):
    r = _apply(shipped["man"], shipped["src"], shipped["tmp"] / "out")
    assert r.exit_code == 0, r.output
    assert ".maxnreg 128" in (shipped["tmp"] / "out" / "k.ptx").read_text()


def _set(path, value):
    def damage(doc):
        *head, last = path
        d = doc
        for key in head:
            d = d[key]
        d[last] = value
    return damage


def _drop(path):
    def damage(doc):
        *head, last = path
        d = doc
        for key in head:
            d = d[key]
        del d[last]
    return damage


#: (what is damaged, how, the field the message must name)
DAMAGE = [
    ("kernels null", _set(["kernels"], None), "kernels"),
    ("kernels [1]", _set(["kernels"], [1]), "kernels[0]"),
    ("kernels a dict", _set(["kernels"], {"k": 1}), "kernels"),
    ("kernels missing", _drop(["kernels"]), "kernels"),
    ("schema true", _set(["schema"], True), "schema"),
    ("schema '1'", _set(["schema"], "1"), "schema"),
    ("schema 2", _set(["schema"], 2), "schema"),
    ("no source_sha256", _drop(["kernels", 0, "source_sha256"]), "kernels[0].source_sha256"),
    ("no arch", _drop(["kernels", 0, "arch"]), "kernels[0].arch"),
    ("no pipeline", _drop(["kernels", 0, "pipeline"]), "kernels[0].pipeline"),
    ("pipeline 5", _set(["kernels", 0, "pipeline"], 5), "kernels[0].pipeline"),
    ("source 7", _set(["kernels", 0, "source"], 7), "kernels[0].source"),
    ("kernel 300 chars", _set(["kernels", 0, "kernel"], "k" * 300), "kernels[0].kernel"),
    ("kernel null", _set(["kernels", 0, "kernel"], None), "kernels[0].kernel"),
    ("arch 89", _set(["kernels", 0, "arch"], 89), "kernels[0].arch"),
    ("arch not an arch", _set(["kernels", 0, "arch"], "sm_89 -o /tmp/x"), "kernels[0].arch"),
    ("sha not hex", _set(["kernels", 0, "source_sha256"], "z" * 64), "kernels[0].source_sha256"),
    ("evaluated_sha256 5", _set(["kernels", 0, "evaluated_sha256"], 5), "kernels[0].evaluated_sha256"),
    ("ptx climbs out", _set(["kernels", 0, "ptx"], "../escape.ptx"), "kernels[0].ptx"),
    ("cubin absolute", _set(["kernels", 0, "cubin"], "/tmp/escape.cubin"), "kernels[0].cubin"),
    ("ptx name too long", _set(["kernels", 0, "ptx"], "p" * 300 + ".ptx"), "kernels[0].ptx"),
    ("error a list", _set(["kernels", 0, "error"], ["x"]), "kernels[0].error"),
    ("top-level list", lambda doc: doc.clear() or doc.update({"__list__": True}), "top"),
]


@pytest.mark.parametrize("what,damage,field", DAMAGE, ids=[d[0] for d in DAMAGE])
def test_a_damaged_manifest_is_bad_input_naming_the_field(shipped, what, damage, field):
    doc = copy.deepcopy(shipped["doc"])
    damage(doc)
    if doc.get("__list__"):
        doc = [1]
    bad = shipped["tmp"] / "bad.json"
    bad.write_text(json.dumps(doc))
    out = shipped["tmp"] / "out"
    r = _apply(bad, shipped["src"], out)
    assert r.exit_code == 2, r.output
    assert field in r.output and "internal error" not in r.output
    assert not out.exists() or not any(out.iterdir())


def test_an_old_absolute_source_is_found_by_name_in_src_dir_only(shipped):
    """A manifest from ``search /abs/dir --emit``: the kernel is the one in the new SRC_DIR, not the old path."""
    tmp = shipped["tmp"]
    old = tmp / "old"
    old.mkdir()
    (old / "k.ptx").write_text(shipped["text"])
    doc = copy.deepcopy(shipped["doc"])
    doc["kernels"][0]["source"] = str(old / "k.ptx")
    man = tmp / "abs.json"
    man.write_text(json.dumps(doc))
    new = tmp / "new"
    new.mkdir()
    (new / "k.ptx").write_text(shipped["text"].replace("ret;", "ret;\n", 1))  # changed since the search
    r = _apply(man, new, tmp / "out")
    assert r.exit_code == 2 and "not the source searched" in r.output, r.output
    assert not (tmp / "out" / "k.ptx").exists()
    r = _apply(man, shipped["src"], tmp / "out2")  # the same file in SRC_DIR: applied
    assert r.exit_code == 0, r.output


@pytest.mark.parametrize("source", ["../outside/k.ptx", "sub/../../outside/k.ptx", "link/k.ptx"])
def test_a_source_outside_src_dir_is_never_read(shipped, source):
    tmp = shipped["tmp"]
    outside = tmp / "outside"
    outside.mkdir()
    (outside / "k.ptx").write_text(shipped["text"])
    src = tmp / "only"
    src.mkdir()
    os.symlink(outside, src / "link")
    doc = copy.deepcopy(shipped["doc"])
    doc["kernels"][0]["source"] = source
    man = tmp / "m.json"
    man.write_text(json.dumps(doc))
    r = _apply(man, src, tmp / "out")
    assert r.exit_code == 2 and "refused" in r.output, r.output
    assert not (tmp / "out" / "k.ptx").exists()


@pytest.mark.parametrize("how", ["same", "symlink", "hardlink", "inside"])
def test_out_dir_never_overwrites_a_source(shipped, how):
    tmp, src = shipped["tmp"], shipped["src"]
    before = (src / "k.ptx").read_bytes()
    out = tmp / "out"
    if how == "same":
        out = src
    elif how == "symlink":
        os.symlink(src, out)
    elif how == "hardlink":
        out.mkdir()
        os.link(src / "k.ptx", out / "k.ptx")
    else:  # OUT_DIR/k.ptx is a symlink to the source
        out.mkdir()
        os.symlink(src / "k.ptx", out / "k.ptx")
    (src / "k.ptx").write_text(shipped["text"])  # the same bytes, so every kernel passes the digest check
    r = _apply(shipped["man"], src, out)
    assert r.exit_code == 2 and "an output never overwrites" in r.output, r.output
    assert (src / "k.ptx").read_bytes() == before
    assert not (out / "k.cubin").exists()
    # and the source is still the one searched: a second apply elsewhere works
    assert _apply(shipped["man"], src, tmp / "elsewhere").exit_code == 0


def test_output_not_writable_survives_a_name_too_long(tmp_path):
    from ptxopt.support.outputs import OutputNotWritable

    e = OutputNotWritable(tmp_path / ("x" * 300) / "k.ptx", "File name too long")
    assert "File name too long" in str(e)


def test_a_launch_dependent_pass_is_rebuilt_for_the_recorded_performance_launch(shipped):
    """The manifest records the performance launch the search bound ``launch_bounds`` to; apply binds it the same."""
    from ptxopt.equivalence.launch import Launch, Origin, Role
    from ptxopt.passes.passmanager import PassManager
    from ptxopt.passes.pipeline import Pipeline

    perf = Launch(grid=(4, 1, 1), block=(128, 1, 1), role=Role.PERFORMANCE, origin=Origin.OPTIONS, source="options")
    pipeline = "launch_bounds{minblocks=2}"
    bound = PassManager(Pipeline.parse(pipeline).with_launch(perf, None)).run(parse(shipped["text"])).module
    doc = copy.deepcopy(shipped["doc"])
    doc["kernels"][0].update(pipeline=pipeline, evaluated_sha256=_sha(emit(bound)), performance_launch=perf.to_json())
    man = shipped["tmp"] / "perf.json"
    man.write_text(json.dumps(doc))
    r = _apply(man, shipped["src"], shipped["tmp"] / "out")
    assert r.exit_code == 0, r.output
    assert ".maxntid 128" in (shipped["tmp"] / "out" / "k.ptx").read_text()
    doc["kernels"][0]["performance_launch"]["block"] = [0, 1, 1]  # damaged: named, exit 2
    man.write_text(json.dumps(doc))
    r = _apply(man, shipped["src"], shipped["tmp"] / "out2")
    assert r.exit_code == 2 and "kernels[0].performance_launch.block" in r.output
