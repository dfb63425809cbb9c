"""benchmarks/reports/state_census.py counts what it says on a small made-up package."""

from tests.scripts import load_script


def _census():
    return load_script("benchmarks/reports/state_census.py")


def test_counts_globals_lrus_and_clearing(tmp_path):
    pkg = tmp_path / "ptxopt"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text(
        "from collections import OrderedDict\nfrom functools import lru_cache\n"
        "TABLE = {'x': 1}\n_MEMO = OrderedDict()\n__all__ = ['f']\n"
        "def f(k):\n    _MEMO[k] = 1\n    _MEMO.popitem(last=False)\n"
        "@lru_cache(maxsize=None)\ndef g(x):\n    return x\n"
        "def clear_memo():\n    _MEMO.clear()\n")
    (pkg / "b.py").write_text("from ptxopt import a\n\ndef cold():\n    a._MEMO.clear()\n    a.g.cache_clear()\n")
    (pkg / "c.py").write_text("_S = Slot('c', dict)\n\ndef drop():\n    _S.get().clear()\n")
    c = _census().census(tmp_path)
    assert c["slots"] == 1
    assert c["lrus"] == 1 and c["lru_cache"] == 1
    assert c["globals"][("state", "container")] == 1 and c["globals"][("table", "container")] == 1
    assert (c["clear_defs"], c["clear_calls_own"], c["clear_calls_other"], c["private_reaches"]) == (1, 2, 2, 1)
