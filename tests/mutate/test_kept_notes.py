"""A person's guidance is never dropped silently by the prompt fitter: while the prompt shows any
note it shows the guidance, shortened (and saying so) when it does not fit whole, and at worst a
line saying it was left out. Other notes go first. Counted with a simple word tokenizer."""

from __future__ import annotations

from pathlib import Path

from cambrian.config import PromptConfig
from cambrian.lang.languages import PYTHON
from cambrian.mutate.kept_notes import KeptNote, note_levels, shortened, shortened_in
from cambrian.mutate.prompts import ProgramView, PromptBuilder
from cambrian.task.folder import Task

SOURCE = ("# EVOLVE-BLOCK-START\ndef f(x):\n    return x + 1\n# EVOLVE-BLOCK-END\n\n\n"
          "def run():\n    return f(1)\n")


def words(text: str) -> int:
    return len(text.split()) + text.count("\n")


def build(tmp_path: Path, notes: tuple[str, ...], budget: int) -> str:
    task = Task(root=tmp_path, name="kept", initial_path=None, initial_source=None,
                language=PYTHON, evaluator_path=tmp_path / "evaluate.py", contract="module",
                problem_statement="Make f(1) large.", description=None, direction="maximize")
    builder = PromptBuilder(task, PromptConfig())
    parent = ProgramView(id=1, source=SOURCE, score=2.0, correct=True)
    messages = builder.build(kind="diff", fmt="diff", parent=parent, notes=notes,
                             budget_tokens=budget, count_tokens=words)
    return "\n".join(m.content for m in messages)


def test_guidance_that_fits_is_shown_whole_and_other_notes_go_first(tmp_path: Path):
    guidance = KeptNote("Guidance from the person running this search: use steps of ten")
    other = "a scratchpad note " * 200  # 600 words: does not fit beside the program
    prompt = build(tmp_path, (guidance, other), budget=700)
    assert "use steps of ten" in prompt and "scratchpad note" not in prompt
    assert not shortened_in(prompt)


def test_huge_guidance_is_shortened_visibly_not_dropped(tmp_path: Path):
    guidance = KeptNote("Guidance from the person running this search: " + "keep it small " * 3000)
    prompt = build(tmp_path, (guidance,), budget=900)
    assert "Guidance from the person running this search: keep it small" in prompt
    assert shortened_in(prompt) and f"of {len(guidance):,} characters shown]" in prompt


def test_with_no_room_at_all_the_prompt_says_the_guidance_was_left_out(tmp_path: Path):
    guidance = KeptNote("Guidance from the person running this search: " + "x " * 5000)
    full = build(tmp_path, (), budget=10_000)
    prompt = build(tmp_path, (guidance,), budget=words(full) + 60)
    assert "left out of this prompt: a person's guidance of" in prompt


def test_levels_without_kept_notes_are_as_before():
    assert note_levels(("a", "b")) == [("a", "b"), ("a",), ()]
    kept = KeptNote("g" * 2000)
    levels = note_levels(("note", kept))
    assert levels[0] == ("note", kept) and levels[1] == (kept,)
    assert levels[2] == (shortened(kept, 1000),) and "1,000 of 2,000" in levels[2][0]
    assert "left out of this prompt" in levels[-1][0]
