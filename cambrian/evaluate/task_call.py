"""Call one function of a task file inside the sandbox (stdlib only; run by path, never
imported by Cambrian).

    python task_call.py FILE FUNCTION ARGUMENT_JSON_FILE

Imports FILE (its folder first on sys.path), calls FUNCTION with the JSON value the argument
file holds, and prints one JSON line last: ``{"reply": VALUE}`` or ``{"raised": "why"}``
(``file_call.py``). `task_function.call_task_function` reads it."""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from types import ModuleType


def _file_call() -> ModuleType:
    """file_call.py beside this file, by path."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "file_call.py")
    spec = importlib.util.spec_from_file_location("cambrian_file_call", path)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def _argument(argument_file: str) -> tuple[object]:
    with open(argument_file, encoding="utf-8") as handle:
        return (json.load(handle),)


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print("usage: python task_call.py FILE FUNCTION ARGUMENT_JSON_FILE", file=sys.stderr)
        return 2
    path, function, argument_file = argv
    return _file_call().call_and_print(path, "cambrian_task_file", function, f"{function}()",
                                       lambda: _argument(argument_file))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
