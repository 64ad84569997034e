from __future__ import annotations

import shutil

import pytest

from cambrian.lang.syntax import check_syntax


def test_valid_python_passes() -> None:
    assert check_syntax("def f(x):\n    return x + 1\n", "python") is None


def test_broken_python_reports_the_line() -> None:
    error = check_syntax("def f(x):\n    y = 1\n    return (x +\n\nprint(f(1))\n", "python")
    assert error is not None and error.startswith("line 3:")


def test_python_errors_found_only_by_compiling_are_reported() -> None:
    error = check_syntax("x = 1\nreturn x\n", "python")
    assert error is not None and error.startswith("line 2: 'return' outside function")


def test_indentation_error_reports_the_line() -> None:
    error = check_syntax("def f():\nreturn 1\n", "python")
    assert error is not None and error.startswith("line 2:")


needs_gpp = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not installed")
needs_rustc = pytest.mark.skipif(shutil.which("rustc") is None, reason="rustc is not installed")


@needs_gpp
def test_valid_cpp_passes() -> None:
    assert check_syntax("#include <vector>\nint f(std::vector<int> v) { return v.size(); }\n", "cpp") is None


@needs_gpp
def test_broken_cpp_reports_the_line() -> None:
    error = check_syntax("int f() {\n    int x = 1\n    return x;\n}\n", "cpp")
    assert error is not None
    assert error.startswith("line 2: expected ',' or ';'") or error.startswith("line 3:")
    assert "';'" in error


@needs_rustc
def test_rust_checks_report_the_line() -> None:
    assert check_syntax("pub fn f(x: i32) -> i32 { x + 1 }\n", "rust") is None
    error = check_syntax("pub fn f(x: i32) -> i32 {\n    x + \"a\"\n}\n", "rust")
    assert error is not None and error.startswith("line 2:")


def test_unchecked_languages_return_none() -> None:
    assert check_syntax("this is { not valid", "lua") is None
    assert check_syntax("anything", "generic") is None
