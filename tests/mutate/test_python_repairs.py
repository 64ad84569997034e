"""Repairs of Python children that nearly work (cambrian/mutate/python_repairs.py), on the
mistakes the 1.5B model made in benchmarks/discovery.py, and through a real proposal."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from support.scripted_llm import ScriptedLLM

from cambrian.api import start
from cambrian.mutate.python_repairs import missing_imports, renamed_function, repair_python_child
from cambrian.store.store import Store

PARENT = '''import numpy as np

# EVOLVE-BLOCK-START
def minimize(f, dim, budget):
    best = None
    for _ in range(budget):
        x = np.zeros(dim)
        best = x if best is None or f(x) < f(best) else best
    return best
# EVOLVE-BLOCK-END
'''

RENAMED_WITHOUT_IMPORT = '''import numpy as np

# EVOLVE-BLOCK-START
def genetic_minimize(f, dim, budget):
    best = np.zeros(dim)
    for _ in range(budget):
        x = best + np.array([random.gauss(0, 1) for _ in range(dim)])
        if f(x) < f(best):
            best = x
    return best
# EVOLVE-BLOCK-END
'''


def run_child(source: str) -> dict:
    namespace: dict = {}
    exec(compile(source, "child", "exec"), namespace)
    return namespace


def test_a_renamed_entry_point_and_a_missing_import_are_repaired():
    assert renamed_function(PARENT, RENAMED_WITHOUT_IMPORT) == ("minimize", "genetic_minimize")
    assert missing_imports(RENAMED_WITHOUT_IMPORT) == ["import random"]
    repaired, repairs = repair_python_child(PARENT, RENAMED_WITHOUT_IMPORT)
    assert repairs == {"imports": ["import random"], "alias": {"minimize": "genetic_minimize"}}
    namespace = run_child(repaired)
    assert namespace["minimize"] is namespace["genetic_minimize"]
    assert namespace["minimize"](lambda x: float((x - 1) @ (x - 1)), 2, 50).shape == (2,)
    # Both repairs stay inside the EVOLVE-BLOCK.
    block = repaired.split("# EVOLVE-BLOCK-START\n")[1]
    assert block.startswith("import random\n") and "minimize = genetic_minimize" in block


def test_no_repair_when_the_child_is_fine_or_the_change_is_ambiguous():
    assert repair_python_child(PARENT, PARENT) == (PARENT, {})
    two_new = RENAMED_WITHOUT_IMPORT.replace(
        "# EVOLVE-BLOCK-END", "def helper():\n    return 1\n# EVOLVE-BLOCK-END")
    assert renamed_function(PARENT, two_new) is None  # which one replaces minimize? unknown
    # A child that still calls the old name gets the old definition back instead.
    calls_old = RENAMED_WITHOUT_IMPORT.replace("return best\n# EVOLVE", "return minimize(f, dim, 1)\n# EVOLVE")
    assert renamed_function(PARENT, calls_old) is None
    repaired, repairs = repair_python_child(PARENT, calls_old)
    assert repairs["restored_definitions"] == ["minimize"]
    assert missing_imports("import random as rnd\nrnd.random()\n") == []
    assert missing_imports("def f(random):\n    return random\n") == []


def renaming_reply(messages: list[dict[str, str]], index: int) -> str:
    value = 2 + index
    return ("Rename the function\n```python\n# EVOLVE-BLOCK-START\n"
            f"def compute_value():\n    return math.floor({value}.5)\n"
            "# EVOLVE-BLOCK-END\n```\n")


def test_a_repaired_child_is_evaluated_and_its_repairs_noted(tmp_path: Path):
    task = tmp_path / "task"
    task.mkdir()
    (task / "initial.py").write_text("# EVOLVE-BLOCK-START\ndef value():\n    return 1\n"
                                     "# EVOLVE-BLOCK-END\n")
    (task / "evaluate.py").write_text(
        "import importlib.util\n\ndef evaluate(path):\n"
        "    spec = importlib.util.spec_from_file_location('c', path)\n"
        "    module = importlib.util.module_from_spec(spec)\n    spec.loader.exec_module(module)\n"
        "    return {'combined_score': float(module.value())}\n")
    with ScriptedLLM(renaming_reply) as llm:
        evolution = start(task, run_dir=tmp_path / "run", overrides=[
            "llm.models=" + json.dumps([llm.model_config()]), "evolution.generations=2",
            "novelty.enabled=false", "meta.enabled=false", "comprehension.enabled=false",
            "evolution.patch_types=[full]", "evolution.patch_type_probs=[1.0]",
            "mutation.schedule=off"])
        try:
            summary = asyncio.run(evolution.run())
        finally:
            evolution.store.close()
    assert summary.best_score is not None and summary.best_score >= 2.0
    with Store.open(tmp_path / "run") as store:
        child = store.candidates.get(2)
        assert child.status == "correct"
        assert child.notes["repairs"] == {"imports": ["import math"],
                                          "alias": {"value": "compute_value"}}
