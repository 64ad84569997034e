from __future__ import annotations

import pytest

from cambrian.config import ConfigError, ModelConfig
from cambrian.lang.languages import language_by_name
from cambrian.mutate.formats.choice import reply_format
from cambrian.mutate.required_names import (
    missing_required_definitions,
    restore_all,
    restore_definitions,
)

PARENT = '''import math

# EVOLVE-BLOCK-START
SCALE = 2


@staticmethod
def build():
    return helper() * SCALE


def helper():
    return 1


def unused():
    return 0
# EVOLVE-BLOCK-END


def run():
    return build() + SCALE
'''

ONLY_HELPER = PARENT.replace(
    PARENT[PARENT.index("SCALE = 2"):PARENT.index("# EVOLVE-BLOCK-END")],
    "def helper():\n    return 5\n",
)


def test_names_used_by_the_fixed_code_are_required():
    assert missing_required_definitions(PARENT, ONLY_HELPER) == ["SCALE", "build"]
    assert missing_required_definitions(PARENT, PARENT) == []


def test_restored_definitions_keep_decorators_and_the_new_code():
    repaired = restore_definitions(PARENT, ONLY_HELPER, ["SCALE", "build"])
    assert "return 5" in repaired  # the model's change survives
    assert "@staticmethod\ndef build():" in repaired
    assert "SCALE = 2" in repaired
    assert "def unused" not in repaired  # names the fixed code never uses may go
    assert missing_required_definitions(PARENT, repaired) == []
    compile(repaired, "child", "exec")
    assert repaired.index("SCALE = 2") < repaired.index("# EVOLVE-BLOCK-END")


def test_helpers_the_rewritten_code_still_calls_are_restored():
    # What the 1.5B model wrote for circle packing: a new construct_packing that still calls
    # compute_max_radii, whose definition the reply left out.
    parent = (
        "import numpy as np\n\n# EVOLVE-BLOCK-START\n"
        "def construct_packing():\n    centers = np.zeros((3, 2))\n"
        "    return centers, compute_max_radii(centers)\n\n\n"
        "def compute_max_radii(centers):\n    return clip(np.ones(len(centers)))\n\n\n"
        "def clip(radii):\n    return radii * 0.5\n\n\n"
        "def unused():\n    return 0\n# EVOLVE-BLOCK-END\n\n\n"
        "def run_packing():\n    return construct_packing()\n")
    child = parent.replace("np.zeros((3, 2))", "local_search(np.zeros((3, 2)))").replace(
        parent[parent.index("def compute_max_radii"):parent.index("# EVOLVE-BLOCK-END")],
        "def local_search(centers):\n    best = centers\n    for step in range(3):\n"
        "        best = best + step\n    return best\n")
    assert missing_required_definitions(parent, child) == ["compute_max_radii"]
    repaired, restored = restore_all(parent, child)
    assert restored == ["clip", "compute_max_radii"]  # clip: called by the restored helper
    assert "def unused" not in repaired and "def local_search" in repaired
    namespace: dict = {}
    exec(compile(repaired, "child", "exec"), namespace)
    assert namespace["run_packing"]()[1].tolist() == [0.5, 0.5, 0.5]
    # A name the child binds itself (a parameter, a local, an import) is not missing.
    shadowing = child.replace("def local_search(centers):", "def local_search(compute_max_radii):")
    assert "compute_max_radii" in missing_required_definitions(parent, child)
    assert missing_required_definitions(parent, shadowing) == []


def test_unparsable_programs_are_left_to_the_syntax_check():
    assert missing_required_definitions(PARENT, "def broken(:\n") == []


def test_reply_format_per_model_and_mutation_kind():
    python, lua = language_by_name("python"), language_by_name("lua")
    local, remote = ModelConfig(), ModelConfig(provider="openai", model="gpt-4.1")
    assert reply_format(local, "diff", python, local=True) == "function"
    assert reply_format(local, "diff", lua, local=True) == "diff"  # no function support there
    assert reply_format(remote, "diff", python, local=False) == "diff"
    for kind in ("full", "cross", "fix"):
        assert reply_format(local, kind, python, local=True) == "full"
    assert reply_format(ModelConfig(patch_format="diff"), "diff", python, local=True) == "diff"
    with pytest.raises(ConfigError, match="unknown reply format 'dif'; did you mean 'diff'"):
        reply_format(ModelConfig(patch_format="dif"), "diff", python, local=True)
