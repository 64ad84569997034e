"""Evaluator for circle packing (command contract: --program_path P --results_dir D).

Writes metrics.json (combined_score = sum of radii of a valid packing) and correct.json.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from pathlib import Path

import numpy as np

N_CIRCLES = 26
TOLERANCE = 1e-6
BEST_KNOWN = 2.635  # published best sum of radii for 26 circles (AlphaEvolve report)


def load_program(path: str):
    spec = importlib.util.spec_from_file_location("candidate", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["candidate"] = module
    spec.loader.exec_module(module)
    return module


def validate(centers: np.ndarray, radii: np.ndarray) -> list[str]:
    problems = []
    if centers.shape != (N_CIRCLES, 2):
        return [f"centers must have shape ({N_CIRCLES}, 2), got {centers.shape}"]
    if radii.shape != (N_CIRCLES,):
        return [f"radii must have shape ({N_CIRCLES},), got {radii.shape}"]
    if not (np.all(np.isfinite(centers)) and np.all(np.isfinite(radii))):
        return ["centers and radii must be finite numbers"]
    negative = np.flatnonzero(radii < 0)
    if negative.size:
        problems.append(f"negative radius for circles {negative.tolist()[:5]}")
    for i in range(N_CIRCLES):
        x, y = centers[i]
        r = radii[i]
        if x - r < -TOLERANCE or x + r > 1 + TOLERANCE or y - r < -TOLERANCE or y + r > 1 + TOLERANCE:
            problems.append(f"circle {i} at ({x:.3f}, {y:.3f}) with r={r:.3f} leaves the square")
    for i in range(N_CIRCLES):
        for j in range(i + 1, N_CIRCLES):
            gap = np.linalg.norm(centers[i] - centers[j]) - radii[i] - radii[j]
            if gap < -TOLERANCE:
                problems.append(f"circles {i} and {j} overlap by {-gap:.4f}")
    return problems


def evaluate(program_path: str) -> tuple[dict, bool, str]:
    try:
        module = load_program(program_path)
        centers, radii, reported = module.run_packing()
        centers = np.asarray(centers, dtype=float)
        radii = np.asarray(radii, dtype=float)
    except Exception as exc:  # the candidate's own failure, reported back to the LLM
        message = f"run_packing() failed: {type(exc).__name__}: {exc}"
        return {"combined_score": 0.0, "public": {}, "private": {}, "text_feedback": message}, False, message
    problems = validate(centers, radii)
    if problems:
        feedback = f"Invalid packing ({len(problems)} problems): " + "; ".join(problems[:8])
        return {"combined_score": 0.0, "public": {}, "private": {}, "text_feedback": feedback}, False, feedback
    total = float(np.sum(radii))
    public = {
        "sum_radii": total,
        "smallest_radius": float(radii.min()),
        "largest_radius": float(radii.max()),
    }
    feedback = (
        f"Valid packing. Sum of radii {total:.4f}. Radii range from {radii.min():.4f} to "
        f"{radii.max():.4f}."
    )
    if abs(float(reported) - total) > 1e-6:
        feedback += f" Note: run_packing reported {float(reported):.4f}, the true sum is {total:.4f}."
    metrics = {
        "combined_score": total,
        "public": public,
        "private": {"fraction_of_best_known": total / BEST_KNOWN},
        "text_feedback": feedback,
    }
    return metrics, True, ""


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--program_path", required=True)
    parser.add_argument("--results_dir", required=True)
    args = parser.parse_args()
    results = Path(args.results_dir)
    results.mkdir(parents=True, exist_ok=True)
    metrics, correct, error = evaluate(args.program_path)
    (results / "metrics.json").write_text(json.dumps(metrics, indent=2))
    (results / "correct.json").write_text(json.dumps({"correct": correct, "error": error}))


if __name__ == "__main__":
    main()
