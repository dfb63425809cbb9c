"""The README's install commands and CI stay one command."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def quick_start() -> list[str]:
    text = (ROOT / "README.md").read_text()
    block = text.split("## Quick start", 1)[1].split("```sh", 1)[1].split("```", 1)[0]
    return [ln for ln in block.splitlines() if ln.startswith("python3 -m venv")]


def test_ci_runs_quick_start_command_2_exactly():
    ci = [ln for ln in (ROOT / ".ci" / "run").read_text().splitlines() if ln.startswith("python3 -m venv")]
    one, two = quick_start()
    assert ci == [two]
    assert one.split(" && ptxopt")[0] == two.split(" && python -m pytest")[0]  # the same install


def test_the_learning_triton_and_ray_extras_are_installed_and_pinned():
    one, two = quick_start()
    assert "pip install -e '.[dev,rl,triton,ray]'" in two  # the learning layer (ptxopt train) named, not implied
    cfg = (ROOT / "setup.cfg").read_text()
    assert re.search(r"^triton = triton==3\.9\.0$", cfg, re.M)
    assert re.search(r"^ray = ray\[default\]==2\.60\.0$", cfg, re.M)
