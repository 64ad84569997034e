"""Call one function of a task file inside the sandbox (stdlib only; run by path, never
imported by Cambrian).

    python task_call.py FILE FUNCTION ARGUMENT_JSON_FILE

Imports FILE (its folder first on sys.path), calls FUNCTION with the JSON value the argument
file holds, and prints one JSON line last: ``{"reply": VALUE}`` or ``{"raised": "why"}``.
`task_function.call_task_function` reads it."""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import traceback


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print("usage: python task_call.py FILE FUNCTION ARGUMENT_JSON_FILE", file=sys.stderr)
        return 2
    path, function, argument_file = argv
    sys.path[0] = os.path.dirname(os.path.abspath(path))
    try:
        spec = importlib.util.spec_from_file_location("cambrian_task_file", path)
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot import {path}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
        target = getattr(module, function, None)
        if not callable(target):
            raise ImportError(f"{os.path.basename(path)} defines no {function}()")
        with open(argument_file, encoding="utf-8") as handle:
            line = json.dumps({"reply": target(json.load(handle))})
    except Exception as error:  # noqa: BLE001 - reported to Cambrian as the call's failure
        line = json.dumps({"raised": traceback.format_exception_only(type(error), error)[-1]
                           .strip()})
    sys.stdout.flush()
    print("\n" + line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
