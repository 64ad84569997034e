"""Line normalisation, comment handling and number collapsing behind the cycling classifier."""

from __future__ import annotations

from cambrian.lang.lines import (
    code_part,
    is_comment_only,
    is_counted,
    language_named,
    line_diff,
    lines_of_code,
    loose_key,
    numeric_literal_count,
    skeleton,
)

PY = language_named("python")
CPP = language_named("cpp")


def test_blank_and_punctuation_lines_are_not_counted():
    assert not is_counted("")
    assert not is_counted("    ")
    assert not is_counted("  });")
    assert not is_counted("]")
    assert is_counted("pass")
    assert is_counted("  x = 0")


def test_diff_ignores_trailing_whitespace_and_brace_lines():
    parent = "int f() {\n  int a = 1;\n  return a;\n}\n"
    child = "int f() {   \n  int a = 2;\n  if (a) {\n    return a;\n  }\n  return 0;\n}\n"
    diff = line_diff(parent, child)
    assert diff.deleted == ("  int a = 1;", "  return a;")
    assert "  }" not in diff.added
    assert diff.added == ("  int a = 2;", "  if (a) {", "    return a;", "  return 0;")


def test_identical_sources_have_an_empty_diff():
    source = "a = 1\nb = 2\n"
    assert line_diff(source, source).added == () == line_diff(source, source).deleted


def test_comments_follow_the_language():
    assert is_comment_only("    # note", PY)
    assert not is_comment_only("x = a // 2", PY)  # floor division, not a comment
    assert is_comment_only("  // note", CPP)
    assert is_comment_only("   * continued block comment", CPP)
    assert not is_comment_only("  *out = 3;", CPP)  # a dereference
    assert not is_comment_only("#include <vector>", CPP)
    assert code_part("x = 1  # why", PY) == "x = 1  "
    assert code_part('s = "#not a comment"', PY) == 's = "#not a comment"'
    assert code_part("int k = 4; // four", CPP) == "int k = 4; "


def test_loose_key_and_skeleton():
    assert loose_key("    a = 1  # restored", PY) == loose_key("a=1", PY) == "a=1"
    assert skeleton("cooling_rate = 0.99992  # slow", PY) == "cooling_rate=#"
    assert skeleton("x2 = 1e-6 + 0x1F - arr[3]", PY) == "x2=#+#-arr[#]"
    assert skeleton("double t = 10.0f;", CPP) == "doublet=#;"


def test_lines_of_code_and_numeric_literals():
    source = "# header 2024\ndef f(x2):\n\n    y = 0.5 * x2  # scale 3\n    return y + 1_000\n"
    assert lines_of_code(source, PY) == 3
    assert numeric_literal_count(source, PY) == 2  # 0.5 and 1_000; comments and names excluded
