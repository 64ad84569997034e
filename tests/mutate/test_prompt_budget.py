"""A mutation prompt always fits the model's window minus the reply budget, however large the
archive, the programs, the feedback and the notes grow; counted with the local model's own
tokenizer and chat template, the way llama.cpp will see it."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import pytest

from cambrian.config import PromptConfig
from cambrian.lang.languages import PYTHON
from cambrian.llm.local_provider import LocalLlamaProvider
from cambrian.mutate.prompts import ProgramView, PromptBuilder, PromptTooLarge
from cambrian.task.folder import Task

WINDOW = 4096
REPLY_TOKENS = 1024
MARGIN = 64
BUDGET = WINDOW - REPLY_TOKENS - MARGIN


@pytest.fixture(scope="module")
def tokenizer() -> Iterator[LocalLlamaProvider]:
    provider = LocalLlamaProvider.from_registry("qwen2.5-coder-0.5b-instruct", n_ctx=WINDOW)
    yield provider
    provider.close()


def _program(index: int, lines: int, rng: random.Random) -> ProgramView:
    body = "\n".join(f"    total += {rng.random():.6f} * x ** {i % 7}  # term {i}"
                     for i in range(lines))
    source = (f"import math\n\n# EVOLVE-BLOCK-START\ndef f(x):\n    total = 0.0\n{body}\n"
              f"    return total\n# EVOLVE-BLOCK-END\n\n\ndef run():\n    return f(0.5)\n")
    return ProgramView(id=index, source=source, score=rng.random() * 10, correct=True,
                       public={"terms": lines, "note": "x" * 50},
                       text_feedback="feedback line\n" * (lines // 2))


def _task(tmp_path: Path) -> Task:
    return Task(root=tmp_path, name="budget", initial_path=None, initial_source=None,
                language=PYTHON, evaluator_path=tmp_path / "evaluate.py", contract="module",
                problem_statement="Make f(0.5) as large as possible. " * 60, description=None,
                direction="maximize")


@pytest.mark.parametrize("archive_size", [10, 100, 1_000, 10_000])
def test_prompts_fit_for_archives_of_growing_size(tmp_path: Path, tokenizer: LocalLlamaProvider,
                                                  archive_size: int):
    rng = random.Random(archive_size)
    # Programs grow with the archive, as they do over a run: the newest are the longest.
    archive = [_program(i, 3 + i * 60 // archive_size, rng) for i in range(archive_size)]
    builder = PromptBuilder(_task(tmp_path), PromptConfig())
    builder.brief = "Summary:\n- " + "maximise f at one half " * 40
    notes = tuple(f"recommendation {i}: " + "try a smaller step " * 10 for i in range(6))
    parent = archive[-1]
    for kind, fmt in (("diff", "diff"), ("full", "full"), ("cross", "full")):
        inspirations = tuple(rng.sample(archive[:-1], k=min(4, archive_size - 1)))
        messages = builder.build(kind=kind, fmt=fmt, parent=parent, inspirations=inspirations,
                                 notes=notes, budget_tokens=BUDGET,
                                 count_tokens=tokenizer.count_tokens)
        exact = tokenizer.count_prompt_tokens(messages)
        assert exact + REPLY_TOKENS <= WINDOW - MARGIN, (archive_size, kind, exact)
        user = messages[1].content
        assert parent.source.strip() in user  # the parent itself is never cut
        assert "## Your task" in user  # the instructions close the prompt, always
        assert user.rstrip().endswith(("Write nothing after the code block.", "Write nothing else."))


def test_sections_shrink_in_priority_order(tmp_path: Path, tokenizer: LocalLlamaProvider):
    rng = random.Random(0)
    builder = PromptBuilder(_task(tmp_path), PromptConfig())
    parent = _program(0, 20, rng)
    inspirations = tuple(_program(i, 20, rng) for i in range(1, 4))
    notes = ("keep the step small",)
    sizes = []
    for budget in (6000, 2500, 1600, 1100):
        messages = builder.build(kind="diff", fmt="diff", parent=parent, inspirations=inspirations,
                                 notes=notes, budget_tokens=budget,
                                 count_tokens=tokenizer.count_tokens)
        assert tokenizer.count_prompt_tokens(messages) <= budget
        sizes.append(messages)
    roomy, *_, tightest = sizes
    assert "Feedback:" in roomy[1].content and "### Program 3" in roomy[1].content
    assert "## Problem statement" in roomy[0].content
    # Feedback and inspirations go before the statement does.
    assert "### Program" not in tightest[1].content and "Feedback:" not in tightest[1].content
    with pytest.raises(PromptTooLarge, match="prompt tokens available"):
        builder.build(kind="diff", fmt="diff", parent=_program(0, 400, rng), budget_tokens=BUDGET,
                      count_tokens=tokenizer.count_tokens)
