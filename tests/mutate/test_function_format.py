from __future__ import annotations

import pytest

from cambrian.mutate.patches import PatchError, apply_reply

PYTHON_PROGRAM = """import functools

def load(path):
    return open(path).read()

# EVOLVE-BLOCK-START
@functools.lru_cache(maxsize=None)
def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def square(x):
    return x * x
# EVOLVE-BLOCK-END

print(fib(10))
"""


def fenced(code: str, tag: str = "python") -> str:
    return f"```{tag}\n{code}```\n"


def test_replaces_one_of_two_functions_including_its_decorator() -> None:
    reply = "Iterative fib.\n" + fenced(
        "def fib(n):\n    a, b = 0, 1\n    for _ in range(n):\n        a, b = b, a + b\n    return a\n"
    )
    result = apply_reply("function", PYTHON_PROGRAM, reply, "python")
    expected = PYTHON_PROGRAM.replace(
        "@functools.lru_cache(maxsize=None)\ndef fib(n):\n    return n if n < 2 else fib(n - 1) + fib(n - 2)\n",
        "def fib(n):\n    a, b = 0, 1\n    for _ in range(n):\n        a, b = b, a + b\n    return a\n",
    )
    assert result.source == expected
    assert result.description == "Iterative fib."
    assert result.n_edits == 1


def test_decorator_in_the_reply_is_kept() -> None:
    reply = fenced("@functools.cache\ndef square(x):\n    return x ** 2\n")
    result = apply_reply("function", PYTHON_PROGRAM, reply, "python")
    assert "@functools.cache\ndef square(x):\n    return x ** 2\n# EVOLVE-BLOCK-END" in result.source
    assert "def fib(n):\n    return n if n < 2" in result.source


def test_new_function_is_appended_to_the_last_block() -> None:
    reply = fenced("def cube(x):\n    return x * square(x)\n")
    result = apply_reply("function", PYTHON_PROGRAM, reply, "python")
    assert result.source == PYTHON_PROGRAM.replace(
        "    return x * x\n# EVOLVE-BLOCK-END", "    return x * x\n\ndef cube(x):\n    return x * square(x)\n# EVOLVE-BLOCK-END"
    )


def test_function_defined_only_outside_the_block_is_rejected() -> None:
    with pytest.raises(PatchError, match="function `load` is defined outside the EVOLVE-BLOCK \\(line 3\\)"):
        apply_reply("function", PYTHON_PROGRAM, fenced("def load(path):\n    return ''\n"), "python")


def test_a_fixed_function_sent_along_with_a_changed_one_is_left_alone() -> None:
    # The 1.5B model's habit: the changed function, then the fixed caller around it.
    reply = fenced("def square(x):\n    return x ** 2\n\n\ndef load(path):\n    return ''\n")
    result = apply_reply("function", PYTHON_PROGRAM, reply, "python")
    assert result.source == PYTHON_PROGRAM.replace("return x * x", "return x ** 2")
    assert result.notes == ["left `load` as it is: outside the EVOLVE-BLOCK, it cannot change"]


def test_method_in_an_indented_block_is_reindented() -> None:
    parent = "class A:\n    # EVOLVE-BLOCK-START\n    def f(self):\n        return 1\n    # EVOLVE-BLOCK-END\n"
    result = apply_reply("function", parent, fenced("def f(self):\n    return 2\n"), "python")
    assert result.source == parent.replace("return 1", "return 2")


def test_imports_in_the_reply_are_noted_not_applied() -> None:
    reply = fenced("import math\n\ndef square(x):\n    return math.pow(x, 2)\n")
    result = apply_reply("function", PYTHON_PROGRAM, reply, "python")
    assert "import math" not in result.source
    assert result.notes == ["ignored 1 line(s) of code outside the functions, e.g. `import math`"]


def test_unparsable_reply_and_missing_functions_are_explained() -> None:
    with pytest.raises(PatchError, match="does not parse: line 2"):
        apply_reply("function", PYTHON_PROGRAM, fenced("def f(x):\n    return (\n"), "python")
    with pytest.raises(PatchError, match="holds no complete function definition"):
        apply_reply("function", PYTHON_PROGRAM, fenced("x = 1\n"), "python")


def test_identical_function_is_a_no_op() -> None:
    with pytest.raises(PatchError, match="identical to the current program"):
        apply_reply("function", PYTHON_PROGRAM, fenced("def square(x):\n    return x * x\n"), "python")


CPP_PROGRAM = """#include <cstdio>
// EVOLVE-BLOCK-START
/* Sum of the first n odd numbers: "{" braces in comments and strings do not count. */
template <typename T>
T odd_sum(T n) {
    const char* brace = "}";
    T total = 0;
    for (T i = 0; i < n; ++i) {
        total += 2 * i + 1;  // '}'
    }
    return total;
}

int helper() { return 42; }
// EVOLVE-BLOCK-END

int main() {
    std::printf("%d\\n", odd_sum(5));
}
"""


def test_cpp_function_is_replaced_by_brace_matching() -> None:
    reply = "Closed form.\n" + fenced("template <typename T>\nT odd_sum(T n) {\n    return n * n;\n}\n", "cpp")
    result = apply_reply("function", CPP_PROGRAM, reply, "cpp")
    assert result.source == CPP_PROGRAM.replace(
        CPP_PROGRAM[CPP_PROGRAM.index("template") : CPP_PROGRAM.index("\n\nint helper")],
        "template <typename T>\nT odd_sum(T n) {\n    return n * n;\n}",
    )


def test_cpp_new_helper_is_placed_before_its_first_use() -> None:
    reply = fenced(
        "static int square(int x) { return x * x; }\n\nint helper() {\n    return square(6) + 6;\n}\n", "cpp"
    )
    result = apply_reply("function", CPP_PROGRAM, reply, "cpp")
    assert "}\n\nstatic int square(int x) { return x * x; }\n\nint helper() {\n    return square(6) + 6;\n}\n// EVOLVE-BLOCK-END" in result.source
    assert result.n_edits == 2


def test_cpp_main_outside_the_block_is_rejected() -> None:
    with pytest.raises(PatchError, match="function `main` is defined outside the EVOLVE-BLOCK \\(line 17\\)"):
        apply_reply("function", CPP_PROGRAM, fenced("int main() { return 0; }\n", "cpp"), "cpp")


def test_rust_and_go_functions() -> None:
    rust = "// EVOLVE-BLOCK-START\nfn f<'a>(s: &'a str) -> char {\n    '{'\n}\n// EVOLVE-BLOCK-END\n"
    result = apply_reply("function", rust, fenced("fn f<'a>(s: &'a str) -> char {\n    '}'\n}\n", "rust"), "rust")
    assert result.source == rust.replace("'{'", "'}'")

    go = "package main\n\n// EVOLVE-BLOCK-START\nfunc f(x int) int {\n\treturn x\n}\n// EVOLVE-BLOCK-END\n"
    result = apply_reply("function", go, fenced("func f(x int) int {\n\treturn `}` + x\n}\n", "go"), "go")
    assert result.source == go.replace("return x", "return `}` + x")


def test_function_format_is_refused_for_languages_without_support() -> None:
    with pytest.raises(ValueError, match="does not support lua"):
        apply_reply("function", "x = 1\n", fenced("function f() end\n", "lua"), "lua")


def test_function_holding_the_block_in_its_body_cannot_be_replaced_whole() -> None:
    parent = "def solve(xs):\n    # EVOLVE-BLOCK-START\n    xs = sorted(xs)\n    # EVOLVE-BLOCK-END\n    return xs\n"
    with pytest.raises(PatchError, match="function `solve` \\(lines 1-5\\) is only partly inside the EVOLVE-BLOCK"):
        apply_reply("function", parent, fenced("def solve(xs):\n    return xs[::-1]\n"), "python")


def test_marker_lines_copied_around_the_functions_are_dropped() -> None:
    reply = fenced("# EVOLVE-BLOCK-START\ndef square(x):\n    return x ** 2\n# EVOLVE-BLOCK-END\n")
    result = apply_reply("function", PYTHON_PROGRAM, reply, "python")
    assert result.source == PYTHON_PROGRAM.replace("    return x * x\n", "    return x ** 2\n")
    assert result.notes == []
