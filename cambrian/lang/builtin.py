"""The languages Cambrian ships. Anything not listed maps to ``GENERIC``, which still supports
EVOLVE-BLOCK markers (they accept any common comment syntax) and the ``diff``/``full`` reply
formats.

The text artifacts (``text=True``: plain text, markdown, YAML, JSON) have no definitions parser,
so the whole-function format, focused edits, setting lines and the improvement step are never
offered for them; YAML and JSON are checked by parsing. Their EVOLVE-BLOCK markers: a line of
its own in plain text (``EVOLVE-BLOCK-START``), an HTML comment in markdown
(``<!-- EVOLVE-BLOCK-START -->``), a ``#`` comment in YAML; JSON has no comments, so a JSON
file evolves whole. A file without markers evolves whole, as a program does."""

from __future__ import annotations

from cambrian.lang.definitions import (
    brace_parser,
    c_function,
    go_function,
    js_function,
    python_definitions,
    rust_function,
)
from cambrian.lang.language import Language
from cambrian.lang.syntax_checks import (
    c_syntax,
    cpp_syntax,
    json_syntax,
    python_syntax,
    rust_syntax,
    yaml_syntax,
)
from cambrian.lang.toolchain import cpp_toolchain, python_toolchain, rust_toolchain

C_BLOCK = ("/*", "*/")

PYTHON = Language(
    "python", (".py", ".pyi", ".pyw"), "#", None, ("python", "py", "python3"),
    masking="python", definitions=python_definitions, syntax_check=python_syntax,
    toolchain=python_toolchain,
    function_openings=("def ", "async def ", "@", "import ", "from ", "class "),
    function_template="def <name>(<parameters>):\n    <its complete new body>",
    header_line=r"^(#.*|import\s.*|from\s+\S+\s+import\s.*|\s*)$",
)
CPP = Language(
    "cpp", (".cpp", ".cc", ".cxx", ".c++", ".hpp", ".hh", ".hxx", ".h++"), "//", C_BLOCK,
    ("cpp", "c++", "cc", "cxx", "hpp"),
    masking="cpp", definitions=brace_parser("cpp", c_function), syntax_check=cpp_syntax,
    toolchain=lambda python: cpp_toolchain(),
    header_line=r"^\s*(#\s*(include|pragma|define)\b.*|using\s+namespace\s.*|//.*|)$",
)
C = Language(
    "c", (".c", ".h"), "//", C_BLOCK, ("c", "h"),
    masking="c", definitions=brace_parser("c", c_function), syntax_check=c_syntax,
    header_line=r"^\s*(#\s*(include|pragma|define)\b.*|//.*|)$",
)
RUST = Language(
    "rust", (".rs",), "//", C_BLOCK, ("rust", "rs"),
    masking="rust", definitions=brace_parser("rust", rust_function), syntax_check=rust_syntax,
    toolchain=lambda python: rust_toolchain(),
    header_line=r"^\s*(use\s.*|extern\s+crate\s.*|#!\[.*|//.*|)$",
)
JAVASCRIPT = Language(
    "javascript", (".js", ".mjs", ".cjs", ".jsx"), "//", C_BLOCK,
    ("javascript", "js", "jsx", "node"),
    masking="javascript", definitions=brace_parser("javascript", js_function),
)
TYPESCRIPT = Language(
    "typescript", (".ts", ".tsx", ".mts", ".cts"), "//", C_BLOCK, ("typescript", "ts", "tsx"),
    masking="javascript", definitions=brace_parser("javascript", js_function),
)
GO = Language("go", (".go",), "//", C_BLOCK, ("go", "golang"),
              masking="go", definitions=brace_parser("go", go_function))
JULIA = Language("julia", (".jl",), "#", ("#=", "=#"), ("julia", "jl"))
LUA = Language("lua", (".lua",), "--", ("--[[", "]]"), ("lua",))
SHELL = Language("shell", (".sh", ".bash", ".zsh"), "#", None, ("bash", "sh", "shell", "zsh"))
GENERIC = Language("generic", (), "#", None, ())
TEXT = Language("text", (".txt", ".text", ".prompt"), None, None, ("text", "txt", "plaintext"),
                text=True)
MARKDOWN = Language("markdown", (".md", ".markdown"), None, ("<!--", "-->"), ("markdown", "md"),
                    text=True)
YAML = Language("yaml", (".yaml", ".yml"), "#", None, ("yaml", "yml"), syntax_check=yaml_syntax,
                text=True)
JSON = Language("json", (".json",), None, None, ("json",), syntax_check=json_syntax, text=True)

BUILTIN_LANGUAGES: tuple[Language, ...] = (
    PYTHON, CPP, C, RUST, JAVASCRIPT, TYPESCRIPT, GO, JULIA, LUA, SHELL, GENERIC,
    TEXT, MARKDOWN, YAML, JSON)
