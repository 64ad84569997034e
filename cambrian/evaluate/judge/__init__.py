"""Contest-grade evaluation: compiled candidates judged on many test cases (seeds 002, 004)."""

from cambrian.config.judge import JudgeConfig, JudgeConfigError, parse_judge_config
from cambrian.evaluate.judge.evaluator import JudgedEvaluator
from cambrian.evaluate.judge.factory import build_judged_evaluator, build_task_evaluator
from cambrian.evaluate.judge.tiers import TieredEvaluator, reference_from_store, stage_results

__all__ = [
    "JudgeConfig",
    "JudgeConfigError",
    "JudgedEvaluator",
    "TieredEvaluator",
    "build_judged_evaluator",
    "build_task_evaluator",
    "parse_judge_config",
    "reference_from_store",
    "stage_results",
]
