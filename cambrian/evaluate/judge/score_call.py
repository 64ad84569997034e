"""Call a judged task's ``score(input_text, output_text)`` inside the sandbox (stdlib only; run
by path; Cambrian imports only ``FILE_CALL_MODULE``, the name its warm worker's server loads
``file_call.py`` under).

    python score_call.py SCORER INPUT OUTPUT

Imports SCORER (its folder first on sys.path, as ``python SCORER`` would have it), calls its
``score`` with the two files' texts and prints one JSON line last: ``{"reply": REPLY}`` (the
dict or number it returned) or ``{"raised": "ValueError: why"}`` (what it raised;
``file_call.py``). `scoring.Scorer` reads that line; whatever the scorer printed before it is
ignored.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from types import ModuleType

FILE_CALL_MODULE = "cambrian_file_call"


def _file_call() -> ModuleType:
    """file_call.py in the folder above, as a warm worker's server loaded it ahead, else by
    path."""
    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                        "file_call.py")
    loaded = sys.modules.get(FILE_CALL_MODULE)
    if loaded is not None and getattr(loaded, "__file__", None) == path:
        return loaded
    spec = importlib.util.spec_from_file_location(FILE_CALL_MODULE, path)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def _plain(value: object) -> object:
    """numpy scalars and arrays (a scorer's usual return types) as JSON values."""
    for method in ("item", "tolist"):
        if hasattr(value, method):
            return getattr(value, method)()
    return str(value)


def _texts(input_path: str, output_path: str) -> tuple[str, str]:
    with open(input_path, encoding="utf-8") as case, \
            open(output_path, encoding="utf-8", errors="replace") as output:
        return case.read(), output.read()


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print("usage: python score_call.py SCORER INPUT OUTPUT", file=sys.stderr)
        return 2
    scorer, input_path, output_path = argv
    return _file_call().call_and_print(scorer, "cambrian_task_scorer", "score",
                                       "score(input_text, output_text)",
                                       lambda: _texts(input_path, output_path), default=_plain)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
