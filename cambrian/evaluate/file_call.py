"""What the sandboxed calls of a task file's function share (``task_call.py``: a task function,
``judge/score_call.py``: a judged task's scorer): import the file, call its function, print one
JSON line last. Stdlib only; those scripts load it by path as ``cambrian_file_call`` (where they
run, no cambrian may be installed), and Cambrian only lets the sandbox read it
(``task_function.FILE_CALL_PATH``)."""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import traceback
from collections.abc import Callable


def call_and_print(path: str, module_name: str, function: str, signature: str,
                   arguments: Callable[[], tuple[object, ...]],
                   default: Callable[[object], object] | None = None) -> int:
    """Imports ``path`` as ``module_name`` (its folder first on sys.path, as ``python PATH``
    would have it), calls ``function`` with what ``arguments()`` gives and prints one JSON line
    last: ``{"reply": VALUE}`` (``default`` serialising what JSON cannot) or ``{"raised": "why"}``
    (what the import, ``arguments()`` or the call raised; ``signature`` names the function
    when the file defines none). Whatever the call printed before it is ignored by the reader."""
    # The file's folder, not this one, is where its own imports are found.
    sys.path[0] = os.path.dirname(os.path.abspath(path))
    try:
        spec = importlib.util.spec_from_file_location(module_name, path)
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot import {path}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module  # dataclasses and pickling look it up by name
        spec.loader.exec_module(module)
        target = getattr(module, function, None)
        if not callable(target):
            raise ImportError(f"{os.path.basename(path)} defines no {signature}")
        line = json.dumps({"reply": target(*arguments())}, default=default)
    except Exception as error:  # noqa: BLE001 - reported to Cambrian as the call's failure
        line = json.dumps({"raised": traceback.format_exception_only(type(error), error)[-1]
                           .strip()})
    sys.stdout.flush()
    print("\n" + line, flush=True)
    return 0
