"""The Triton hook's SASS listings on disk (:mod:`ptxopt.measure.sass_store`):
a stored listing is the one nvdisasm gives, and anything else is a miss."""

from __future__ import annotations

from pathlib import Path

from ptxopt.measure import cubin_memo
from ptxopt.measure.sass_store import SassStore, active, stored
from ptxopt.toolchain import compile_ptx, disassemble

CORPUS = Path(__file__).resolve().parents[2] / "corpus"
PTX = (CORPUS / "triton/softmax_row.ptx").read_text()


def _key(cubin: bytes) -> str:
    return cubin_memo.decoder_tag() + cubin_memo.digest(cubin)


def test_a_stored_listing_is_nvdisasms(tmp_path):
    cubin = compile_ptx(PTX, "sm_89", memo=False).cubin
    fresh = disassemble(cubin)
    store = SassStore(tmp_path)
    assert store.get(_key(cubin)) is None and store.misses == 1
    store.put(_key(cubin), fresh)
    got = SassStore(tmp_path).get(_key(cubin))  # another process: another object, the same folder
    assert (got.arch, got.instructions, got.labels, got.warnings) == \
        (fresh.arch, fresh.instructions, fresh.labels, fresh.warnings)
    assert [i.control for i in got.instructions] == [i.control for i in fresh.instructions]  # compare=False field
    assert got.text(control=True) == fresh.text(control=True)


def test_damaged_or_foreign_files_are_misses(tmp_path):
    cubin = compile_ptx(PTX, "sm_89", memo=False).cubin
    store = SassStore(tmp_path)
    store.put(_key(cubin), disassemble(cubin))
    [path] = list(tmp_path.iterdir())
    path.write_bytes(path.read_bytes()[:-20])  # truncated
    assert store.get(_key(cubin)) is None
    other = SassStore(tmp_path)
    other.put("another nvdisasm|" + cubin_memo.digest(cubin), disassemble(cubin))
    assert other.get(_key(cubin)) is None  # another decoder's listing is not this one's


def test_listings_use_a_store_only_inside_stored(tmp_path, monkeypatch):
    from ptxopt.measure import disasm

    cubin = compile_ptx(PTX, "sm_89", memo=False).cubin
    runs = []
    real = disasm.disassemble_many
    monkeypatch.setattr(disasm, "disassemble_many", lambda c, **kw: runs.append(len(c)) or real(c, **kw))
    store = SassStore(tmp_path)
    cubin_memo.clear()
    cubin_memo.listings([cubin])  # no store open: nothing written
    assert runs == [1] and store.get(_key(cubin)) is None and active() is None
    cubin_memo.clear()
    with stored(store):
        [a] = cubin_memo.listings([cubin])
    assert runs == [1, 1] and store.writes == 1 and active() is None
    cubin_memo.clear()
    with stored(store):
        [b] = cubin_memo.listings([cubin])
    assert runs == [1, 1] and a.instructions == b.instructions
