"""What the improvement step's loop can reach when its score and move are right: the circle
packing example wired by ``cambrian/mutate/improve_step.py``, its score and move written by hand
(not by a model), run once per move. A ceiling for what an ``improve_step`` child could gain
from the plain start, not a result of a search.

    .venv/bin/python benchmarks/step_ceiling.py
"""

from __future__ import annotations

import runpy
import tempfile
from pathlib import Path

from cambrian.mutate.step.python import scaffold

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "circle_packing" / "initial.py"
SCORE = "    return float(np.sum(radii))\n"
MOVES = {
    "nudge": "    centers[i] = np.clip(centers[i] + np.random.normal(0, 0.02, 2), 0, 1)\n",
    "relocate": "    centers[i] = np.random.random(2)\n",
}


def main() -> None:
    wired = scaffold(EXAMPLE.read_text())
    assert wired is not None
    stub = '    """A copy of `centers` and `radii` with one small random change."""\n' \
           "    return centers, radii\n"
    print(f"plain start: {float(runpy.run_path(str(EXAMPLE))['run_packing']()[2]):.4f}")
    for name, change in MOVES.items():
        move = ("    i = np.random.randint(len(centers))\n" + change
                + "    return centers, compute_max_radii(centers)\n")
        source = wired.source.replace("    return 0.0\n", SCORE).replace(stub, move)
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "program.py"
            path.write_text(source)
            program = runpy.run_path(str(path))
            program["np"].random.seed(0)
            total = program["run_packing"]()[2]
        print(f"{name}: sum of radii {total:.4f} after the step's loop")


if __name__ == "__main__":
    main()
