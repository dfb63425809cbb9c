"""resolve_arch: the module's own .target wins over a default, --arch over both."""

from ptxopt import parse
from ptxopt.toolchain.arch import DEFAULT_ARCH, resolve_arch, target_arch

HOPPER = ".version 8.0\n.target sm_90a\n.address_size 64\n.visible .entry k()\n{\n\tret;\n}\n"


def test_target_from_text_and_module():
    assert target_arch(HOPPER) == "sm_90a"
    assert target_arch(parse(HOPPER)) == "sm_90a"


def test_override_wins():
    assert resolve_arch(HOPPER, "sm_100a") == "sm_100a"


def test_virtual_or_missing_target_falls_back():
    assert target_arch(".version 8.0\n.target compute_90\n") is None
    assert resolve_arch(".version 8.0\n") == DEFAULT_ARCH


def test_first_real_gpu_entry_of_a_list():
    assert target_arch(".target texmode_independent, sm_80\n") == "sm_80"
