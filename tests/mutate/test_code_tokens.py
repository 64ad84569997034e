"""Code tokens: what is left of a program when comments and layout are set aside."""

from __future__ import annotations

from cambrian.lang.code_mask import code_tokens
from cambrian.lang.languages import as_language

CPP = as_language("cpp")
PYTHON = as_language("python")


def test_cpp_comments_and_layout_do_not_count_but_strings_and_defines_do():
    base = '#define LIMIT 4\nint f() {\n    return 3; // three\n}\nconst char* s = "a//b";\n'
    relaid = ('#define LIMIT 4\n/* the function */\nint f()\n{\n    return 3;\n}\n\n'
              'const char* s = "a//b";  // kept\n')
    assert code_tokens(base, CPP) == code_tokens(relaid, CPP)
    assert code_tokens(base, CPP) != code_tokens(base.replace("LIMIT 4", "LIMIT 5"), CPP)
    assert code_tokens(base, CPP) != code_tokens(base.replace('"a//b"', '"a//c"'), CPP)
    assert code_tokens(base, CPP) != code_tokens(base.replace("return 3", "return 4"), CPP)


def test_python_keeps_indentation_structure_and_drops_comments():
    base = "def f(x):\n    y = x  # copy\n    return y\n"
    assert code_tokens(base, PYTHON) == code_tokens("def f(x):\n\n    y = x\n    return y\n", PYTHON)
    moved = "def f(x):\n    y = x\nreturn y\n"  # the return left the function
    assert code_tokens(base, PYTHON) != code_tokens(moved, PYTHON)
    assert code_tokens("x = (1,\n", PYTHON) == ["x", "=", "(1,"]  # does not tokenise: plain split
