"""Files the analyses write next to a trace, in ``<trace location>/trace/``, for the report:

- ``taxonomy.json``: the latest edit labelling (judge, per-edit labels, prevalence, helpfulness);
- ``tuning.json``: the latest tuning-ceiling result;
- ``replay-<context>.json``: replay-stability results;
- ``labels.sqlite``: the judge-label cache, for traces that are not Cambrian run stores.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

EXTRAS_DIR = "trace"
TAXONOMY_FILE = "taxonomy.json"
TUNING_FILE = "tuning.json"


def extras_dir(origin: Path) -> Path:
    """The extras folder of a trace read from ``origin`` (a folder or a file inside one)."""
    origin = Path(origin)
    return (origin if origin.is_dir() else origin.parent) / EXTRAS_DIR


def write_json(path: Path, data: Any) -> Path:
    """Write atomically, so the report never reads half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True, allow_nan=False) + "\n",
                   encoding="utf-8")
    os.replace(tmp, path)
    return path
