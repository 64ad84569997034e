"""Every verdict comes from a real compiled program run under the judge's limits."""

from __future__ import annotations

from pathlib import Path

import pytest

from cambrian.evaluate.judge.evaluator import JudgedEvaluator

CPP_ACCEPTED = """
#include <iostream>
int main() { long n; std::cin >> n; std::cout << n << "\\n"; }
"""
CPP_WRONG = """
#include <iostream>
int main() { long n; std::cin >> n; std::cout << n + 1 << "\\n"; }
"""
CPP_INFINITE_LOOP = """
#include <iostream>
int main() { long n; std::cin >> n; volatile unsigned long spin = 0; while (true) ++spin; }
"""
CPP_MEMORY_HOG = """
#include <iostream>
#include <vector>
int main() {
    std::vector<std::vector<char>> blocks;
    while (true) blocks.emplace_back(16 << 20, 1);  // touch 16 MB at a time
}
"""
CPP_NULL_DEREFERENCE = """
#include <iostream>
int main() {
    long n; std::cin >> n;
    volatile int* pointer = nullptr;
    *pointer = static_cast<int>(n);
    std::cout << n << "\\n";
}
"""
CPP_ABORT = """
#include <cstdlib>
#include <iostream>
int main() { std::cerr << "invariant broken\\n"; std::abort(); }
"""
CPP_OUTPUT_FLOOD = """
#include <cstdio>
int main() { for (int i = 0; i < 2000000; ++i) std::puts("0123456789"); }
"""
CPP_SYNTAX_ERROR = """#include <iostream>
int main() {
    long n; std::cin >> n;
    std::cout << n << "\\n"
}
"""  # the missing semicolon is reported at line 4 or 5 depending on the compiler


def case_verdicts(result) -> list[str]:
    return [case["verdict"] for case in result.extra["cases"]]


@pytest.fixture
def cpp(make_evaluator) -> JudgedEvaluator:
    return make_evaluator("cpp")


async def test_accepted_program_scores_every_public_case(cpp: JudgedEvaluator, tmp_path: Path):
    result = await cpp.evaluate(CPP_ACCEPTED, tmp_path / "work")
    assert result.status == "ok", result.error
    assert case_verdicts(result) == ["AC"] * 4
    inputs = [int((await cpp.case_store.input_path(c)).read_text()) for c in cpp.public_cases]
    assert result.combined_score == pytest.approx(sum(inputs) / len(inputs))
    assert result.public["accepted"] == 4
    assert "AC 4" in result.text_feedback


async def test_wrong_answer_carries_the_scorers_message(cpp: JudgedEvaluator, tmp_path: Path):
    result = await cpp.evaluate(CPP_WRONG, tmp_path / "work")
    assert result.status == "incorrect"
    assert result.combined_score is None
    first = result.extra["cases"][0]
    assert first["verdict"] == "WA"
    assert "outside" in first["message"]
    assert "WA" in result.text_feedback and "outside" in result.text_feedback


async def test_infinite_loop_is_a_time_limit_verdict(cpp: JudgedEvaluator, tmp_path: Path):
    result = await cpp.evaluate(CPP_INFINITE_LOOP, tmp_path / "work")
    assert result.status == "incorrect"
    verdicts = case_verdicts(result)
    assert verdicts and set(verdicts) == {"TLE"}
    # Cases not yet started when the first one failed are skipped, not run to the limit.
    assert len(verdicts) + result.extra["skipped_cases"] == 4
    assert result.extra["skipped_cases"] >= 1


async def test_memory_hog_is_a_memory_limit_verdict(make_evaluator, tmp_path: Path):
    # Generous time limits: on a loaded machine touching 256 MB can take seconds, and only the
    # memory limit may end this program.
    cpp = make_evaluator("cpp", time_limit_s=20.0, wall_time_limit_s=60.0)
    result = await cpp.evaluate(CPP_MEMORY_HOG, tmp_path / "work")
    assert set(case_verdicts(result)) == {"MLE"}
    assert "256 MB" in result.extra["cases"][0]["message"]


@pytest.mark.parametrize(
    ("source", "expected_in_message"),
    [(CPP_NULL_DEREFERENCE, "SIGSEGV"), (CPP_ABORT, "invariant broken")],
    ids=["null-dereference", "abort"],
)
async def test_crash_is_a_runtime_error(
    cpp: JudgedEvaluator, tmp_path: Path, source: str, expected_in_message: str
):
    result = await cpp.evaluate(source, tmp_path / "work")
    assert result.status == "incorrect"
    assert set(case_verdicts(result)) == {"RE"}
    assert expected_in_message in result.extra["cases"][0]["message"]


async def test_output_flood_is_an_output_limit_verdict(cpp: JudgedEvaluator, tmp_path: Path):
    result = await cpp.evaluate(CPP_OUTPUT_FLOOD, tmp_path / "work")
    assert set(case_verdicts(result)) == {"OLE"}
    assert "100000 bytes" in result.extra["cases"][0]["message"]


async def test_compile_error_reports_the_compiler_message_and_line(
    cpp: JudgedEvaluator, tmp_path: Path
):
    result = await cpp.evaluate(CPP_SYNTAX_ERROR, tmp_path / "work")
    assert result.status == "incorrect"
    assert result.extra["verdict"] == "CE"
    assert result.extra["cases"] == []
    assert "expected ';'" in result.error
    assert "main.cpp:4:" in result.error or "main.cpp:5:" in result.error
    assert set(result.extra["compile"]["error_lines"]) & {4, 5}
    assert "did not compile" in result.text_feedback
    assert str(tmp_path) not in result.error  # build-folder paths are stripped


async def test_failed_cases_score_zero_when_not_all_must_pass(make_evaluator, tmp_path: Path):
    lenient = make_evaluator("cpp", require_all_accepted=False)
    result = await lenient.evaluate(CPP_WRONG, tmp_path / "work")
    assert result.status == "ok"
    assert result.combined_score == 0.0
    assert case_verdicts(result) == ["WA"] * 4


async def test_mean_minus_std_penalises_inconsistency(make_evaluator, tmp_path: Path):
    plain = await make_evaluator("cpp").evaluate(CPP_ACCEPTED, tmp_path / "a")
    penalised = await make_evaluator("cpp", aggregation="mean_minus_std", std_penalty=0.5).evaluate(
        CPP_ACCEPTED, tmp_path / "b"
    )
    scores = [case["score"] for case in plain.extra["cases"]]
    mean = sum(scores) / len(scores)
    std = (sum((s - mean) ** 2 for s in scores) / len(scores)) ** 0.5
    assert penalised.combined_score == pytest.approx(mean - 0.5 * std)
    assert penalised.combined_score < plain.combined_score
