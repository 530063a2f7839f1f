"""`ck.compile` remembers builds: an unchanged cell re-run reuses its analysis, code and backend."""

from __future__ import annotations

import numpy as np
import pytest
from programs import ADD

import choreo_kernel as ck


def test_an_unchanged_source_reuses_its_build() -> None:
    first = ck.compile(ADD, target="sim")
    again = ck.compile(ADD, target="sim")
    assert again.analysis is first.analysis
    assert again.function("add") is first.function("add")  # one backend, its functions loaded once


def test_defines_target_and_filename_are_part_of_the_key() -> None:
    base = ck.compile(ADD, defines={"X": 1}, target="sim")
    assert ck.compile(ADD, defines={"X": 2}, target="sim").analysis is not base.analysis
    assert ck.compile(ADD, defines={"X": 1}, target="sim", filename="other.co").analysis is not base.analysis
    assert ck.compile(ADD, defines={"X": 1}, target="sim").analysis is base.analysis


def test_an_unhashable_define_is_compiled_every_time_and_still_works() -> None:
    first = ck.compile(ADD, defines={"X": [1]}, target="sim")
    second = ck.compile(ADD, defines={"X": [1]}, target="sim")
    assert second.analysis is not first.analysis
    a = np.ones((16, 16), np.float32)
    np.testing.assert_array_equal(second.add(a, a), a + a)


def test_a_failing_source_is_not_remembered() -> None:
    broken = ADD.replace("a.chunkat", "missing.chunkat")
    for _ in range(2):
        with pytest.raises(ck.ChoreoError, match="missing"):
            ck.compile(broken, target="sim")


def test_a_module_keeps_its_defines_and_names_its_kernels() -> None:
    """What a profile's child process needs to compile the same build again, and what ncu is to profile."""
    two_kernels = ADD.replace("return out;", "parallel i by 2 : block { }\n  return out;")
    module = ck.compile(two_kernels, defines={"X": 1}, target="sim")
    assert module.defines == {"X": 1}
    assert module.kernels("add") == ["add_kernel", "add_kernel_2"]
    rebuilt = ck.compile(module.source, module.defines, "sim")
    assert rebuilt.analysis is module.analysis


def test_host_code_is_skipped_in_a_file_and_an_error_in_a_cell() -> None:
    source = "int main() { return 0; }\n" + ADD
    assert ck.compile(source, target="sim").functions == ["add"]
    with pytest.raises(ck.ChoreoError, match="a Choreo cell holds no other code"):
        ck.compile(source, target="sim", host_code=False)
