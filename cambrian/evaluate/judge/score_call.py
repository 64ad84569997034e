"""Call a judged task's ``score(input_text, output_text)`` inside the sandbox (stdlib only; run
by path, never imported by Cambrian).

    python score_call.py SCORER INPUT OUTPUT

Imports SCORER (its folder first on sys.path, as ``python SCORER`` would have it), calls its
``score`` with the two files' texts and prints one JSON line last: ``{"reply": REPLY}`` (the
dict or number it returned) or ``{"raised": "ValueError: why"}`` (what it raised).
`scoring.Scorer` reads that line; whatever the scorer printed before it is ignored.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import traceback


def _plain(value: object) -> object:
    """numpy scalars and arrays (a scorer's usual return types) as JSON values."""
    for method in ("item", "tolist"):
        if hasattr(value, method):
            return getattr(value, method)()
    return str(value)


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print("usage: python score_call.py SCORER INPUT OUTPUT", file=sys.stderr)
        return 2
    scorer, input_path, output_path = argv
    # The scorer's folder, not this one, is where its own imports are found.
    sys.path[0] = os.path.dirname(os.path.abspath(scorer))
    try:
        spec = importlib.util.spec_from_file_location("cambrian_task_scorer", scorer)
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot import {scorer}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module  # dataclasses and pickling look it up by name
        spec.loader.exec_module(module)
        score = getattr(module, "score", None)
        if not callable(score):
            raise ImportError(f"{os.path.basename(scorer)} defines no score(input_text, "
                              "output_text)")
        with open(input_path, encoding="utf-8") as case, \
                open(output_path, encoding="utf-8", errors="replace") as output:
            reply = score(case.read(), output.read())
        line = json.dumps({"reply": reply}, default=_plain)
    except Exception as error:  # noqa: BLE001 - a rejection, reported as the case's message
        line = json.dumps({"raised": traceback.format_exception_only(type(error), error)[-1]
                           .strip()})
    sys.stdout.flush()
    print("\n" + line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
