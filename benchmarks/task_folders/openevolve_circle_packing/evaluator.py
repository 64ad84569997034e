"""Evaluator for circle packing of 26 circles in a unit square, in OpenEvolve's shape:
``evaluate(program_path)`` returns metrics with ``combined_score`` = sum of radii / 2.635 (the
published best) for a valid packing, 0 with ``validity`` 0 otherwise."""

import importlib.util
import traceback

import numpy as np

TARGET_VALUE = 2.635  # AlphaEvolve's result for n=26
N = 26


def validate_packing(centers, radii):
    if centers.shape != (N, 2) or radii.shape != (N,):
        print(f"Wrong shapes: centers {centers.shape}, radii {radii.shape}")
        return False
    if not (np.all(np.isfinite(centers)) and np.all(np.isfinite(radii))) or np.any(radii < 0):
        print("Non-finite or negative values")
        return False
    for i in range(N):
        x, y = centers[i]
        r = radii[i]
        if x - r < -1e-6 or x + r > 1 + 1e-6 or y - r < -1e-6 or y + r > 1 + 1e-6:
            print(f"Circle {i} at ({x}, {y}) with radius {r} is outside the unit square")
            return False
    for i in range(N):
        for j in range(i + 1, N):
            dist = np.sqrt(np.sum((centers[i] - centers[j]) ** 2))
            if dist < radii[i] + radii[j] - 1e-6:
                print(f"Circles {i} and {j} overlap: dist={dist}, r1+r2={radii[i] + radii[j]}")
                return False
    return True


def evaluate(program_path):
    try:
        spec = importlib.util.spec_from_file_location("program", program_path)
        program = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(program)
        centers, radii, reported_sum = program.run_packing()
        centers = np.asarray(centers, dtype=float)
        radii = np.asarray(radii, dtype=float)
    except Exception as error:
        print(f"Evaluation failed completely: {error}")
        traceback.print_exc()
        return {"sum_radii": 0.0, "target_ratio": 0.0, "validity": 0.0, "combined_score": 0.0}
    valid = validate_packing(centers, radii)
    sum_radii = float(np.sum(radii)) if valid else 0.0
    target_ratio = sum_radii / TARGET_VALUE
    if valid and abs(float(reported_sum) - sum_radii) > 1e-6:
        print(f"Warning: reported sum {reported_sum} differs from the computed {sum_radii}")
    return {
        "sum_radii": sum_radii,
        "target_ratio": target_ratio,
        "validity": 1.0 if valid else 0.0,
        "combined_score": target_ratio,
    }
