"""Which CUDA toolkit can build llama-server for which GPUs: refused before a build that would not run."""

from __future__ import annotations

import pytest

from assistant.engines.cuda import BuildRefused, Toolkit, build_warnings, check_archs, find_toolkit, parse_arch, parse_version

NVCC_12 = "nvcc: NVIDIA (R) Cuda compiler driver\nCuda compilation tools, release 12.4, V12.4.131\n"


def test_the_version_is_read_from_nvcc_output():
    assert parse_version(NVCC_12) == (12, 4)
    assert parse_version("Cuda compilation tools, release 13.0, V13.0.88") == (13, 0)
    assert parse_version("something else") is None


@pytest.mark.parametrize("given, arch", [("70", 70), ("7.0", 70), ("sm_70", 70), ("SM_90", 90), ("12.0", 120)])
def test_an_architecture_is_taken_with_or_without_dot_and_prefix(given, arch):
    assert parse_arch(given) == arch


@pytest.mark.parametrize("bad", ["abc", "7", "sm_", "2000", ""])
def test_a_bad_architecture_is_refused_saying_what_is_taken(bad):
    with pytest.raises(ValueError, match="compute capability such as 70"):
        parse_arch(bad)


def test_cuda_13_is_refused_for_v100s_with_the_fix():
    with pytest.raises(BuildRefused) as refused:
        check_archs(Toolkit("/usr/local/cuda-13.0/bin/nvcc", (13, 0)), [70, 90])
    message = str(refused.value)
    assert "CUDA 13.0" in message and "sm_70" in message and "sm_90" not in message.split(":")[0]
    assert "Install CUDA 12.8" in message and "--nvcc /usr/local/cuda-12.8/bin/nvcc" in message


def test_cuda_12_9_builds_for_v100s_with_a_warning_naming_the_issue_and_12_8():
    check_archs(Toolkit("/usr/local/cuda-12.9/bin/nvcc", (12, 9)), [70])  # made, not refused
    (warning,) = build_warnings(Toolkit("/usr/local/cuda-12.9/bin/nvcc", (12, 9)), [70, 80])
    assert "llama.cpp#28416" in warning and "CUDA 12.8 works" in warning and "V100-32GB" in warning
    assert build_warnings(Toolkit("nvcc", (12, 8)), [70]) == [] and build_warnings(Toolkit("nvcc", (12, 9)), [80, 90]) == []


def test_cuda_12_builds_for_v100s_and_hopper_but_11_7_not_for_hopper():
    check_archs(Toolkit("nvcc", (12, 4)), [70, 90])
    check_archs(Toolkit("nvcc", (13, 0)), [90])
    with pytest.raises(BuildRefused, match="sm_90: that needs CUDA 11.8"):
        check_archs(Toolkit("nvcc", (11, 7)), [90])


def test_no_toolkit_is_refused_pointing_at_cpu_builds():
    with pytest.raises(BuildRefused, match="no CUDA toolkit found.*--cpu"):
        check_archs(None, [70])


def test_a_given_nvcc_is_the_only_one_tried(tmp_path):
    assert find_toolkit(str(tmp_path / "nvcc")) is None, "a missing --nvcc is not replaced by the one on PATH"
