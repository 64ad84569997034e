"""Rust and Python candidates go through the same compile -> run -> score pipeline."""

from __future__ import annotations

from pathlib import Path

RUST_ACCEPTED = """
use std::io::Read;
fn main() {
    let mut text = String::new();
    std::io::stdin().read_to_string(&mut text).unwrap();
    let n: i64 = text.trim().parse().unwrap();
    println!("{}", n / 2);
}
"""
RUST_COMPILE_ERROR = """fn main() {
    let n: i64 = 3;
    let m: String = n;
    println!("{}", m);
}
"""
RUST_PANIC = """
fn main() {
    let values: Vec<i64> = Vec::new();
    println!("{}", values[7]);
}
"""
PYTHON_ACCEPTED = """
n = int(input())
print(n)
"""
PYTHON_SYNTAX_ERROR = """n = int(input())
if n > 3
    print(n)
"""
PYTHON_RAISES = """
n = int(input())
raise RuntimeError(f"cannot handle {n}")
"""
PYTHON_MEMORY_HOG = """
blocks = []
while True:
    blocks.append(bytearray(16 << 20))
"""


async def test_rust_program_runs_and_is_scored(make_evaluator, tmp_path: Path):
    result = await make_evaluator("rust").evaluate(RUST_ACCEPTED, tmp_path / "work")
    assert result.status == "ok", result.error
    assert [c["verdict"] for c in result.extra["cases"]] == ["AC"] * 4
    assert 50 <= result.combined_score <= 500


async def test_rust_compile_error_points_at_its_line(make_evaluator, tmp_path: Path):
    result = await make_evaluator("rust").evaluate(RUST_COMPILE_ERROR, tmp_path / "work")
    assert result.extra["verdict"] == "CE"
    assert "mismatched types" in result.error
    assert "main.rs:3:" in result.error
    assert 3 in result.extra["compile"]["error_lines"]


async def test_rust_panic_is_a_runtime_error(make_evaluator, tmp_path: Path):
    result = await make_evaluator("rust").evaluate(RUST_PANIC, tmp_path / "work")
    assert result.extra["cases"][0]["verdict"] == "RE"
    assert "index out of bounds" in result.extra["cases"][0]["message"]


async def test_python_program_runs_under_the_interpreter(make_evaluator, tmp_path: Path):
    result = await make_evaluator("python").evaluate(PYTHON_ACCEPTED, tmp_path / "work")
    assert result.status == "ok", result.error
    assert result.public["accepted"] == 4


async def test_python_syntax_error_is_a_compile_error_with_line(make_evaluator, tmp_path: Path):
    result = await make_evaluator("python").evaluate(PYTHON_SYNTAX_ERROR, tmp_path / "work")
    assert result.extra["verdict"] == "CE"
    assert 'File "main.py", line 2' in result.error
    assert result.extra["compile"]["error_lines"] == [2]


async def test_python_exception_and_memory_hog(make_evaluator, tmp_path: Path):
    # Generous time limits: on a loaded machine the interpreter's start alone can take seconds,
    # and the hog must meet the memory limit, not a time limit.
    python = make_evaluator("python", time_limit_s=10.0, wall_time_limit_s=30.0)
    raised = await python.evaluate(PYTHON_RAISES, tmp_path / "raises")
    assert raised.extra["cases"][0]["verdict"] == "RE"
    assert "cannot handle" in raised.extra["cases"][0]["message"]
    hog = await python.evaluate(PYTHON_MEMORY_HOG, tmp_path / "hog")
    assert hog.extra["cases"][0]["verdict"] == "MLE", hog.extra["cases"][0]
