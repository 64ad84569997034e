"""Each format, end to end: write the reply a model would write for a known intended change,
apply it, and get exactly the intended program back."""

from __future__ import annotations

import difflib

import pytest

from cambrian.mutate.patches import apply_reply
from cambrian.task.blocks import line_text

PY_PARENT = """import numpy as np

# EVOLVE-BLOCK-START
def pack(items, capacity):
    items = sorted(items, reverse=True)
    bins = []
    for item in items:
        for b in bins:
            if sum(b) + item <= capacity:
                b.append(item)
                break
        else:
            bins.append([item])
    return bins


def score(bins):
    return len(bins)
# EVOLVE-BLOCK-END


def main():
    print(score(pack([4, 8, 1, 4, 2, 1], 10)))
"""

PY_CHILD = PY_PARENT.replace(
    "    items = sorted(items, reverse=True)\n    bins = []\n",
    "    items = sorted(items, reverse=True)\n    loads = []\n    bins = []\n",
).replace(
    "            if sum(b) + item <= capacity:\n                b.append(item)\n                break\n",
    "            if sum(b) + item <= capacity:\n                b.append(item)\n                loads.append(sum(b))\n                break\n",
).replace("    return len(bins)\n", "    return len(bins) + 0.0\n")

CPP_PARENT = """#include <vector>

// EVOLVE-BLOCK-START
int solve(const std::vector<int>& xs) {
    int best = 0;
    for (int x : xs) {
        if (x > best) {
            best = x;
        }
    }
    return best;
}
// EVOLVE-BLOCK-END

int main() { return solve({1, 2, 3}) == 3 ? 0 : 1; }
"""

CPP_CHILD = CPP_PARENT.replace("        if (x > best) {\n            best = x;\n        }\n", "        best = std::max(best, x);\n")


def diff_reply(parent: str, child: str) -> str:
    """SEARCH/REPLACE edits turning ``parent`` into ``child``, one context line around each."""
    old = [line_text(line) for line in parent.splitlines(keepends=True)]
    new = [line_text(line) for line in child.splitlines(keepends=True)]
    edits = []
    for group in difflib.SequenceMatcher(None, old, new).get_grouped_opcodes(1):
        old_start, old_end = group[0][1], group[-1][2]
        new_start, new_end = group[0][3], group[-1][4]
        search = "".join(line + "\n" for line in old[old_start:old_end])
        replace = "".join(line + "\n" for line in new[new_start:new_end])
        edits.append(f"<<<<<<< SEARCH\n{search}=======\n{replace}>>>>>>> REPLACE\n")
    return "Apply the intended change.\n" + "\n".join(edits)


@pytest.mark.parametrize(("parent", "child", "language"), [(PY_PARENT, PY_CHILD, "python"), (CPP_PARENT, CPP_CHILD, "cpp")])
def test_diff_round_trip(parent: str, child: str, language: str) -> None:
    reply = diff_reply(parent, child)
    result = apply_reply("diff", parent, reply, language)
    assert result.source == child
    assert result.description == "Apply the intended change."
    assert result.n_edits == reply.count("<<<<<<< SEARCH")


@pytest.mark.parametrize(("parent", "child", "language"), [(PY_PARENT, PY_CHILD, "python"), (CPP_PARENT, CPP_CHILD, "cpp")])
def test_full_round_trip(parent: str, child: str, language: str) -> None:
    reply = f"Rewrite.\n```{language}\n{child}```\n"
    assert apply_reply("full", parent, reply, language).source == child


def test_function_round_trip_python() -> None:
    new_score = "def score(bins):\n    return len(bins) + 0.0\n"
    child = PY_PARENT.replace("def score(bins):\n    return len(bins)\n", new_score)
    result = apply_reply("function", PY_PARENT, f"Float score.\n```python\n{new_score}```", "python")
    assert result.source == child


def test_function_round_trip_cpp() -> None:
    new_solve = CPP_CHILD[CPP_CHILD.index("int solve") : CPP_CHILD.index("// EVOLVE-BLOCK-END")]
    result = apply_reply("function", CPP_PARENT, f"Use std::max.\n```cpp\n{new_solve}```", "cpp")
    assert result.source == CPP_CHILD
