"""The improvement step wired into C++ programs: compiled by the system's g++ and run, the
scaffold behaves like its parent, a score and a move written into it improve the contest's
routes, and a run wires it and has the model write both."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from support.scripted_llm import ScriptedLLM

from cambrian.api import start
from cambrian.core.errors import ConfigError
from cambrian.lang.languages import CPP
from cambrian.mutate.step.wiring import (
    given_score_error,
    scaffold,
    step_contract_error,
    step_instruction,
    unwritten_step_error,
)
from cambrian.store.store import Store

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "heuristic_contest"
CONTEST = (EXAMPLE / "initial.cpp").read_text()
GIVEN_SCORE = (EXAMPLE / "step_score.cpp").read_text()  # the contest's own score of a route
needs_gpp = pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")

SCORE_STUB = "double score_solve(const Input& in, const std::string& solution) {\n    return 0.0;\n}"
MOVE_STUB = ("std::string change_solve(const Input& in, std::string solution, std::mt19937& rng) {"
             "\n    return solution;\n}")
# What a model writes for the contest: the route walked as the problem's rules say...
ROUTE_VALUE = """double score_solve(const Input& in, const std::string& solution) {
    if ((int)solution.size() > in.budget) return -1e18;
    int n = in.n, r = in.depot_r, c = in.depot_c;
    std::vector<char> seen(in.tree_v.size(), 0);
    double total = 0;
    for (char m : solution) {
        int d = m == 'U' ? 0 : m == 'D' ? 1 : m == 'L' ? 2 : 3;
        r += DR[d];
        c += DC[d];
        if (r < 0 || r >= n || c < 0 || c >= n || in.grid[r][c] == '#') return -1e18;
        for (size_t i = 0; i < in.tree_v.size(); ++i)
            if (!seen[i] && in.tree_r[i] == r && in.tree_c[i] == c) {
                seen[i] = 1;
                total += in.tree_v[i];
            }
    }
    if (r != in.depot_r || c != in.depot_c) return -1e18;
    return total;
}"""
# ...and a detour: a step into a neighbouring cell and back, inserted anywhere.
DETOUR = """std::string change_solve(const Input& in, std::string solution, std::mt19937& rng) {
    int i = std::uniform_int_distribution<int>(0, (int)solution.size())(rng);
    const char* pairs[4] = {"UD", "DU", "LR", "RL"};
    solution.insert(i, pairs[rng() % 4]);
    return solution;
}"""


def compiled(tmp_path: Path, source: str, name: str) -> Path:
    (tmp_path / f"{name}.cpp").write_text(source)
    subprocess.run(["g++", "-std=c++17", "-O2", "-o", str(tmp_path / name),
                    str(tmp_path / f"{name}.cpp")], check=True, capture_output=True)
    return tmp_path / name


def contest_scores(program: Path, seeds: range) -> list[float]:
    spec = importlib.util.spec_from_file_location("contest_score", EXAMPLE / "score.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["contest_score"] = module
    spec.loader.exec_module(module)
    scores = []
    for seed in seeds:
        case = subprocess.run([sys.executable, str(EXAMPLE / "gen.py"), str(seed)],
                              capture_output=True, text=True, check=True).stdout
        route = subprocess.run([str(program)], input=case, capture_output=True, text=True,
                               check=True).stdout
        scores.append(module.score(case, route)["score"])
    return scores


@needs_gpp
def test_the_scaffold_behaves_like_the_contest_baseline_and_is_found_again(tmp_path: Path):
    wired = scaffold(CONTEST, CPP)
    assert wired is not None and wired.language == "cpp"
    assert (wired.entry, wired.step, wired.inputs, wired.solution) == (
        "solve", "improve_solve", ("in",), ("solution",))
    assert "std::string initial_solve(const Input& in) {" in wired.source
    assert SCORE_STUB in wired.source and MOVE_STUB in wired.source
    assert wired.stubs == {"score_solve", "change_solve"}
    again = scaffold(wired.source, "cpp")
    assert again is not None and again.source == wired.source and again.stubs == wired.stubs
    parent, child = compiled(tmp_path, CONTEST, "parent"), compiled(tmp_path, wired.source, "wired")
    assert contest_scores(child, range(3)) == contest_scores(parent, range(3))


@needs_gpp
def test_a_written_score_and_move_improve_the_routes(tmp_path: Path):
    wired = scaffold(CONTEST, CPP)
    assert wired is not None
    scored = wired.source.replace(SCORE_STUB, ROUTE_VALUE)
    assert scaffold(scored, CPP).stubs == {"change_solve"}  # the move is asked for next
    both = scored.replace(MOVE_STUB, DETOUR)
    assert scaffold(both, CPP).stubs == frozenset()
    seeds = range(4)
    before = contest_scores(compiled(tmp_path, CONTEST, "parent"), seeds)
    after = contest_scores(compiled(tmp_path, both, "child"), seeds)
    assert all(a >= b for a, b in zip(after, before, strict=True)) and sum(after) > sum(before)


COUNTER = """#include <iostream>
#include <vector>

// EVOLVE-BLOCK-START
// Zeros, one per slot.
std::vector<int> build(int n) {
    return std::vector<int>(n, 0);
}
// EVOLVE-BLOCK-END

int main() {
    int total = 0;
    for (int value : build(5)) total += value;
    std::cout << total << std::endl;
}
"""
COUNTER_SCORE = """double score_build(int n, const std::vector<int>& solution) {
    double total = 0;
    for (int value : solution) total += value;
    return total;
}"""


def _counter_move(throws: str) -> str:
    return ("std::vector<int> change_build(int n, std::vector<int> solution, std::mt19937& rng) {\n"
            f"    if ({throws}) throw std::runtime_error(\"no luck\");\n"
            "    int i = std::uniform_int_distribution<int>(0, (int)solution.size() - 1)(rng);\n"
            "    solution[i] = std::min(solution[i] + 1, 9);\n"
            "    return solution;\n}")


@needs_gpp
def test_a_move_that_throws_on_a_rare_draw_is_no_change_and_one_that_always_throws_fails(
        tmp_path: Path):
    wired = scaffold(COUNTER, CPP)
    assert wired is not None and wired.solution == ("solution",)
    scored = wired.source.replace("    return 0.0;", "\n".join(
        COUNTER_SCORE.split("\n")[1:-1])).replace("#include <vector>", "#include <vector>\n"
                                                  "#include <stdexcept>")
    stub = ("std::vector<int> change_build(int n, std::vector<int> solution, std::mt19937& rng) {"
            "\n    return solution;\n}")
    rare = compiled(tmp_path, scored.replace(stub, _counter_move("rng() % 10 == 0")), "rare")
    assert subprocess.run([str(rare)], capture_output=True, text=True).stdout.strip() == "45"
    always = compiled(tmp_path, scored.replace(stub, _counter_move("true")), "always")
    failed = subprocess.run([str(always)], capture_output=True, text=True)
    assert failed.returncode != 0 and "no luck" in failed.stderr


def test_programs_it_cannot_be_wired_to_are_left_alone():
    void_entry = COUNTER.replace("std::vector<int> build(int n) {\n    return std::vector<int>(n, 0);",
                                 "void build(int n) {\n    return;").replace(
        "for (int value : build(5)) total += value;", "build(5);")
    template = COUNTER.replace("std::vector<int> build(int n) {",
                               "template <int N>\nstd::vector<int> build(int n) {")
    recursive = COUNTER.replace("return std::vector<int>(n, 0);",
                                "return n ? build(n - 1) : std::vector<int>();")
    defaulted = COUNTER.replace("build(int n)", "build(int n = 5)")
    for source in (void_entry, template, recursive, defaulted):
        assert scaffold(source, CPP) is None, source
    assert scaffold(COUNTER, "rust") is None  # no step in that language


def test_the_instruction_states_the_typed_contract_the_helpers_and_the_outline():
    wired = scaffold(CONTEST, CPP)
    assert wired is not None
    score = step_instruction(wired, "score_solve", "unused")
    assert "Write `double score_solve(const Input& in, const std::string& solution)`" in score
    assert "return -1e18 when they would reject it" in score
    assert "- `std::vector<int> distances_from(const Input& in, int r0, int c0)`: Shortest-path" in score
    assert "- `void walk(" in score  # a helper that returns nothing is still one to call
    move = step_instruction(wired, "change_solve", "Detour: a step out and back.")
    assert "The change: Detour: a step out and back." in move
    assert ("```cpp\nstd::string change_solve(const Input& in, std::string solution, "
            "std::mt19937& rng) {\n    if (solution.empty()) return solution;") in move


def test_a_child_that_does_not_write_the_asked_function_is_refused():
    wired = scaffold(CONTEST, CPP)
    assert wired is not None
    elsewhere = wired.source.replace("return (double)value / steps_there;",
                                     "return (double)value / (steps_there + 1);")
    assert "does not write `score_solve`" in unwritten_step_error(
        wired.source, elsewhere, "score_solve", CPP)
    comment_only = wired.source.replace(SCORE_STUB, "// rated\n" + SCORE_STUB)
    assert unwritten_step_error(wired.source, comment_only, "score_solve", CPP)
    written = wired.source.replace(SCORE_STUB, ROUTE_VALUE)
    assert unwritten_step_error(wired.source, written, "score_solve", CPP) == ""


def route_step(messages: list[dict[str, str]], index: int) -> str:
    """Writes the function it is asked for, as a small model does, the score first."""
    task = messages[-1]["content"].split("## Your task\n", 1)[1]
    assert task.startswith("`solve` improves what `initial_solve` built"), task
    if "Write `double score_solve(" in task:
        return f"Walk the route\n```cpp\n{ROUTE_VALUE.replace('return total;', f'return total + 0 * {index};')}\n```\n"
    return f"Detour\n```cpp\n{DETOUR.replace('rng() % 4', f'(rng() + {index}) % 4')}\n```\n"


def judged_run(tmp_path: Path, model, *overrides: str) -> Store:
    """The contest example run with only improvement-step proposals, answered by ``model``."""
    with ScriptedLLM(model) as llm:
        evolution = start(EXAMPLE, run_dir=tmp_path / "run", overrides=[
            "llm.models=[" + json.dumps(llm.model_config(patch_format="function")) + "]",
            "novelty.enabled=false", "meta.enabled=false", "mutation.types=[improve_step]",
            "trace_feedback.tune_operator=false", "judge.public_seeds=[0,3]",
            "judge.tiers.quick_cases=2", *overrides])
        try:
            asyncio.run(evolution.run())
        finally:
            evolution.store.close()
    return Store.open(tmp_path / "run")


@needs_gpp
def test_a_judged_run_wires_the_step_and_the_model_writes_it(tmp_path: Path):
    store = judged_run(tmp_path, route_step, "evolution.generations=4",
                       "mutation.improve_score=null")  # the model writes the score too
    try:
        initial = store.candidates.find(1)
        children = [r for r in store.candidates.list("correct") if r.id != 1]
        assert children, [r.error for r in store.candidates.list()]
        first = children[0]
        assert first.notes["focus_function"] == "score_solve"
        assert "std::string initial_solve(const Input& in)" in first.source
        assert first.score == initial.score  # a score without a move changes nothing
        moves = [r for r in children if r.notes.get("focus_function") == "change_solve"]
        assert moves and moves[0].parent_id == first.id
        assert moves[0].score > initial.score  # the loop with the model's detour gained
    finally:
        store.close()


def test_a_score_that_never_reads_the_solution_is_refused():
    """The 1.5B copied the greedy into the score, returning 0 whatever the route."""
    wired = scaffold(CONTEST, CPP)
    assert wired is not None
    greedy_copy = wired.source.replace(SCORE_STUB, SCORE_STUB.replace(
        "    return 0.0;", "    double value = 0;\n    std::string route = initial_solve(in);\n"
        "    return value + route.size() * 0;"))
    assert step_contract_error(greedy_copy, CPP) == (
        "`score_solve` never reads `solution`, so it rates every change the same and the loop "
        "keeps none; compute the number from `solution`, which the loop hands it")
    assert step_contract_error(wired.source, CPP) == ""  # the stub is not the model's yet
    assert step_contract_error(wired.source.replace(SCORE_STUB, ROUTE_VALUE), CPP) == ""


@needs_gpp
def test_the_task_s_own_score_is_wired_and_with_a_detour_improves_the_routes(tmp_path: Path):
    wired = scaffold(CONTEST, CPP, GIVEN_SCORE)
    assert wired is not None and wired.stubs == {"change_solve"}
    assert wired.given == {"score_solve"} and GIVEN_SCORE.strip() in wired.source
    assert {wired.to_write(np.random.default_rng(seed)) for seed in range(20)} == {"change_solve"}
    again = scaffold(wired.source, CPP, GIVEN_SCORE)
    assert again is not None and again.source == wired.source and again.given == wired.given
    seeds = range(4)
    before = contest_scores(compiled(tmp_path, CONTEST, "parent"), seeds)
    assert contest_scores(compiled(tmp_path, wired.source, "wired"), seeds) == before
    moved = contest_scores(compiled(tmp_path, wired.source.replace(MOVE_STUB, DETOUR), "child"),
                           seeds)
    assert all(a >= b for a, b in zip(moved, before, strict=True)) and sum(moved) > sum(before)


def test_a_score_the_model_rewrote_is_no_longer_the_task_s():
    wired = scaffold(CONTEST, CPP, GIVEN_SCORE)
    assert wired is not None
    rewritten = wired.source.replace("return value;\n}", "return value * 2;\n}")
    again = scaffold(rewritten, CPP, GIVEN_SCORE)
    assert again is not None and again.given == frozenset() and again.stubs == {"change_solve"}


def test_a_given_score_that_cannot_be_wired_is_a_clear_error():
    assert given_score_error(CONTEST, GIVEN_SCORE, CPP) == ""
    assert given_score_error(None, GIVEN_SCORE, CPP) == ""  # the model writes the first program
    assert given_score_error(CONTEST, GIVEN_SCORE.replace("score_solve", "score_route"), CPP) == (
        "mutation.improve_score defines score_route, but the initial program's step scores with "
        "score_solve")
    two = GIVEN_SCORE + "\nint helper() { return 1; }\n"
    assert given_score_error(CONTEST, two, CPP) == (
        "mutation.improve_score: it must define exactly one function named score_<entry>; it "
        "defines ['score_solve', 'helper']")
    assert "no entry function" in given_score_error("void run() {}\n", GIVEN_SCORE, CPP)
    trailing = GIVEN_SCORE.replace("double score_solve(const Input& in, const std::string& "
                                   "solution) {", "auto score_solve(const Input& in, const "
                                   "std::string& solution) -> double {")
    assert given_score_error(CONTEST, trailing, CPP).startswith(
        "mutation.improve_score: the step cannot take score_solve as written")
    assert given_score_error(CONTEST, GIVEN_SCORE, "rust") == (
        "mutation.improve_score: rust programs have no improvement step (Python and C++ do)")


@needs_gpp
def test_a_given_score_that_does_not_compile_is_a_clear_error():
    broken = GIVEN_SCORE.replace("return value;", "return value + bonus;")
    error = given_score_error(CONTEST, broken, CPP)
    assert error.startswith("mutation.improve_score: the initial program with this score wired "
                            "in does not compile (lines of the wired program): line ")
    assert "'bonus' was not declared in this scope" in error


def move_only(messages: list[dict[str, str]], index: int) -> str:
    """Writes the move: with the task's score, no proposal asks for a score."""
    task = messages[-1]["content"].split("## Your task\n", 1)[1]
    assert "Write `std::string change_solve(" in task, task
    return f"Detour\n```cpp\n{DETOUR.replace('rng() % 4', f'(rng() + {index}) % 4')}\n```\n"


@needs_gpp
def test_a_judged_run_with_the_task_s_score_asks_the_model_for_the_move_only(tmp_path: Path):
    store = judged_run(tmp_path, move_only, "evolution.generations=3")
    try:
        initial = store.candidates.find(1)
        children = [r for r in store.candidates.list() if r.id != 1]
        assert children and all(r.notes["focus_function"] == "change_solve" for r in children)
        first = children[0]
        assert first.status == "correct", first.error
        assert GIVEN_SCORE.strip() in first.source and first.score > initial.score
    finally:
        store.close()


def test_a_run_whose_given_score_does_not_wire_fails_before_its_folder_is_made(tmp_path: Path):
    task = tmp_path / "contest"
    shutil.copytree(EXAMPLE, task)
    (task / "step_score.cpp").write_text(GIVEN_SCORE.replace("score_solve", "score_route"))
    with pytest.raises(ConfigError, match="defines score_route, but the initial program's step "
                                          "scores with score_solve"):
        start(task, run_dir=tmp_path / "run", providers={})
    assert not (tmp_path / "run").exists()


def test_the_run_entry_picks_the_step_when_the_program_alone_cannot():
    """Without EVOLVE markers nothing marks the code outside as calling `solve`, and a wrapper
    the model added makes two roots: the program alone names no entry, the run's entry does."""
    wrapper = ("\nstd::string solve_twice(const Input& in) {\n    return solve(in);\n}\n"
               "// EVOLVE-BLOCK-END")
    child = CONTEST.replace("// EVOLVE-BLOCK-END", wrapper, 1)
    unmarked = child.replace("// EVOLVE-BLOCK-START\n", "").replace("// EVOLVE-BLOCK-END\n", "")
    assert scaffold(unmarked, CPP) is None
    wired = scaffold(unmarked, CPP, entry="solve")
    assert wired is not None and wired.entry == "solve" and wired.score == "score_solve"
    assert scaffold(child, CPP, entry="solve").entry == "solve"  # markers: the same either way
    assert step_instruction(wired, "change_solve", "Swap two moves").count("change_solve")
