"""Reply formats and prompts on text artifacts: SEARCH/REPLACE and full rewrites of a prompt, a
markdown text with markers, a YAML config the parse check guards; the prompt speaks of a text,
and shows the examples the parent got wrong with an instruction to reflect on them (GEPA)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cambrian.config import PromptConfig
from cambrian.lang.languages import MARKDOWN, PYTHON, TEXT, YAML, Language
from cambrian.lang.syntax import check_syntax
from cambrian.mutate.failed_examples import chosen_failures
from cambrian.mutate.grammars import format_instructions
from cambrian.mutate.patches import PatchError, apply_reply
from cambrian.mutate.prompts import ProgramView, PromptBuilder
from cambrian.mutate.text_artifacts import INTENT_INSTRUCTIONS
from cambrian.task.folder import Task

PROMPT = "You classify news sentences.\nAnswer with the topic.\n"
MARKED = ("# Classifier\n\n<!-- EVOLVE-BLOCK-START -->\nAnswer with the topic.\n"
          "<!-- EVOLVE-BLOCK-END -->\n\nThank you.\n")
CONFIG = "# EVOLVE-BLOCK-START\nrate: 0.5\nsteps: 10\n# EVOLVE-BLOCK-END\nname: fixed\n"


def diff(old: str, new: str, description: str = "Name the topics") -> str:
    return f"{description}\n<<<<<<< SEARCH\n{old}\n=======\n{new}\n>>>>>>> REPLACE\n"


def test_search_replace_edits_a_prompt() -> None:
    reply = diff("Answer with the topic.",
                 "Answer with one word: sports, business, science or politics.")
    result = apply_reply("diff", PROMPT, reply, TEXT)
    assert result.source == ("You classify news sentences.\n"
                             "Answer with one word: sports, business, science or politics.\n")
    assert result.description == "Name the topics" and result.n_edits == 1
    with pytest.raises(PatchError, match="SEARCH"):
        apply_reply("diff", PROMPT, diff("A line the text does not have.", "x"), TEXT)


@pytest.mark.parametrize("fence", ["```text", "```", "```markdown"])
def test_a_full_rewrite_replaces_a_prompt_whatever_its_fence(fence: str) -> None:
    reply = f"Shorter\n{fence}\nClassify the sentence.\nAnswer in one word.\n```\n"
    result = apply_reply("full", PROMPT, reply, TEXT)
    assert result.source == "Classify the sentence.\nAnswer in one word.\n"


def test_a_rewrite_that_changes_nothing_is_refused_in_words_for_a_text() -> None:
    with pytest.raises(PatchError, match="the text in the reply is identical to the current text"):
        apply_reply("full", PROMPT, f"Same\n```text\n{PROMPT}```\n", TEXT)
    with pytest.raises(PatchError, match="put the complete text in one ```text"):
        apply_reply("full", PROMPT, "Just say the topic.", TEXT)


def test_a_markdown_rewrite_changes_only_its_block() -> None:
    reply = ("Name them\n```markdown\n# Another title\n\n<!-- EVOLVE-BLOCK-START -->\n"
             "Answer with sports, business, science or politics.\n"
             "<!-- EVOLVE-BLOCK-END -->\n\nThank you.\n```\n")
    result = apply_reply("full", MARKED, reply, MARKDOWN)
    assert result.source == MARKED.replace("Answer with the topic.",
                                           "Answer with sports, business, science or politics.")
    assert any("outside the EVOLVE-BLOCKs" in note for note in result.notes)  # title restored
    edited = apply_reply("diff", MARKED, diff("Answer with the topic.", "Answer in one word."),
                         MARKDOWN)
    assert edited.source == MARKED.replace("Answer with the topic.", "Answer in one word.")


def test_a_yaml_config_edit_is_checked_by_parsing() -> None:
    good = apply_reply("diff", CONFIG, diff("rate: 0.5", "rate: 0.25"), YAML).source
    assert check_syntax(good, YAML) is None and "rate: 0.25" in good
    broken = apply_reply("diff", CONFIG, diff("steps: 10", "steps: [10"), YAML).source
    assert check_syntax(broken, YAML) is not None


@pytest.mark.parametrize("language", [TEXT, MARKDOWN, YAML])
def test_format_instructions_speak_of_a_text(language: Language) -> None:
    diff_text = format_instructions("diff", language, blocks=0)
    assert "copied exactly from the current text" in diff_text and "in the text" in diff_text
    assert "appear once inside the EVOLVE-BLOCK" in format_instructions("diff", language, 1)
    assert "the whole text, rewritten, in one" in format_instructions("full", language, 0)
    one_block = format_instructions("full", language, 1)
    assert "ALL the text of the EVOLVE-BLOCK" in one_block and "all of it" in one_block
    for fmt, blocks in (("diff", 0), ("full", 0), ("full", 1), ("full", 2)):
        assert "function" not in format_instructions(fmt, language, blocks)
    # Programs keep their wording.
    assert "Write every function of the block" in format_instructions("full", PYTHON, 1)
    assert "current program" in format_instructions("diff", PYTHON, 1)


# ---------------------------------------------------------------------------- prompts


def task(tmp_path: Path, language: Language = TEXT, source: str = PROMPT) -> Task:
    return Task(root=tmp_path, name="prompt", initial_path=tmp_path / "initial.txt",
                initial_source=source, language=language, evaluator_path=tmp_path / "evaluate.py",
                contract="module", problem_statement="Classify sentences by topic.",
                description=None, direction="maximize")


def case(sentence: str, expected: str, output: str) -> dict[str, Any]:
    return {"input": sentence, "expected": expected, "output": output,
            "correct": expected == output}


CASES = (case("The striker scored twice.", "sports", "sports"),
         case("Shares fell five percent.", "business", "The sentence is about"),
         case("The bank cut 2,000 jobs.", "business", "politics"),
         case("Astronomers found water.", "science", "space"),
         case("The senate passed the bill.", "politics", "business"))


def parent(source: str = PROMPT, cases: tuple[dict[str, Any], ...] = CASES) -> ProgramView:
    return ProgramView(id=7, source=source, score=0.2, correct=True, public={"accuracy": 0.2},
                       text_feedback="right per topic: sports 1/1", cases=cases)


def words(text: str) -> int:
    return len(text) // 4


def build(builder: PromptBuilder, budget: int = 8000, **options: Any) -> tuple[str, str]:
    options = {"kind": "diff", "fmt": "diff", "parent": parent(), **options}
    system, user = builder.build(budget_tokens=budget, count_tokens=words, **options)
    return system.content, user.content


def test_a_text_prompt_speaks_of_a_text_and_shows_its_failed_examples(tmp_path: Path) -> None:
    builder = PromptBuilder(task(tmp_path), PromptConfig())
    other = ProgramView(id=3, source="Say the topic.\n", score=0.1, correct=True)
    system, user = build(builder, intent="local_fix", inspirations=(other,))
    assert system.startswith("You are an expert writer. You improve a text step by step")
    assert "EVOLVE-BLOCK" not in system  # no markers: the whole text may change
    assert f"## Current text\n```text\n{PROMPT.rstrip()}\n```" in user
    assert "## Other texts for inspiration\n### Text 3 (score 0.1)\n```text" in user
    assert "## Examples it got wrong (4 of 5)\n1. input: Shares fell five percent.\n" \
           "   expected: business\n   answered: The sentence is about" in user
    assert "The striker scored twice." not in user  # what it got right is not listed
    task_part = user.split("## Your task\n", 1)[1]
    assert task_part.startswith(INTENT_INSTRUCTIONS["local_fix"])
    assert "why did the current text fail on them?" in task_part
    for word in ("programmer", "algorithm", "function", "code inside"):
        assert word not in system + task_part, word


@pytest.mark.parametrize(("intent", "kind", "strategy", "expected"), [
    (None, "full", None, "Rewrite the text with a better approach."),
    ("strategy", "full", "Worked examples: add two.", "Build this method into the text: "
                                                      "Worked examples: add two."),
    ("refactor", "full", None, INTENT_INSTRUCTIONS["refactor"]),
    ("crossover", "cross", None, INTENT_INSTRUCTIONS["crossover"]),
])
def test_every_task_of_a_text_prompt_is_worded_for_a_text(tmp_path: Path, intent: str | None,
                                                         kind: str, strategy: str | None,
                                                         expected: str) -> None:
    builder = PromptBuilder(task(tmp_path), PromptConfig())
    _, user = build(builder, kind=kind, fmt="full", intent=intent, strategy=strategy)
    assert user.split("## Your task\n", 1)[1].startswith(expected)


def test_markers_of_a_text_are_named_in_its_system_message(tmp_path: Path) -> None:
    builder = PromptBuilder(task(tmp_path, MARKDOWN, MARKED), PromptConfig())
    system, user = build(builder, parent=parent(MARKED))
    assert "Only the text between the EVOLVE-BLOCK-START and EVOLVE-BLOCK-END lines" in system
    assert "You improve a text (markdown)" in system and "```markdown\n# Classifier" in user


def test_failed_examples_shrink_before_the_text_and_take_the_reflection_with_them(
        tmp_path: Path) -> None:
    builder = PromptBuilder(task(tmp_path), PromptConfig())
    many = tuple(case(f"Sentence number {i} about the budget.", "politics", "business")
                 for i in range(40))
    roomy = build(builder, parent=parent(cases=many))[1]
    assert "## Examples it got wrong (40 of 40)" in roomy and "(34 more not shown)" in roomy
    sizes = {}
    for budget in (400, 330, 250):
        _, user = build(builder, budget=budget, parent=parent(cases=many))
        assert f"## Current text\n```text\n{PROMPT.rstrip()}\n```" in user  # never cut
        shown = user.count("   expected: politics")
        sizes[budget] = shown
        assert ("why did the current text fail" in user) == (shown > 0)
    assert sizes[400] >= sizes[330] >= sizes[250] == 0 and sizes[400] > 0
    hidden = PromptBuilder(task(tmp_path), PromptConfig(show_text_feedback=False))
    assert "Examples it got wrong" not in build(hidden)[1]


def test_a_program_gets_the_same_reflection_on_its_failed_cases(tmp_path: Path) -> None:
    source = "def classify(s):\n    return 'sports'\n"
    builder = PromptBuilder(task(tmp_path, PYTHON, source), PromptConfig())
    system, user = build(builder, parent=parent(source))
    assert "expert python programmer" in system and "## Current program" in user
    assert "## Examples it got wrong (4 of 5)" in user
    assert "why did the current program fail on them?" in user


def test_failures_shown_are_taken_from_each_expected_answer_in_turn() -> None:
    chosen = chosen_failures(CASES, 3)
    assert [c["expected"] for c in chosen] == ["business", "science", "politics"]
    assert [c["input"] for c in chosen_failures(CASES, 4)][-1] == "The bank cut 2,000 jobs."
