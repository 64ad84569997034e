"""Orchard Harvest case generator: `python gen.py SEED` prints one test case (see problem.md)."""

from __future__ import annotations

import random
import sys
from collections import deque


def reachable_cells(grid: list[list[str]], start: tuple[int, int]) -> list[tuple[int, int]]:
    n = len(grid)
    seen = {start}
    queue = deque([start])
    while queue:
        r, c = queue.popleft()
        for dr, dc in ((1, 0), (-1, 0), (0, 1), (0, -1)):
            nr, nc = r + dr, c + dc
            if 0 <= nr < n and 0 <= nc < n and grid[nr][nc] == "." and (nr, nc) not in seen:
                seen.add((nr, nc))
                queue.append((nr, nc))
    return sorted(seen)


def generate(seed: int) -> str:
    rng = random.Random(seed)
    n = rng.randint(15, 30)
    rock_density = rng.uniform(0.05, 0.25)
    grid = [["#" if rng.random() < rock_density else "." for _ in range(n)] for _ in range(n)]
    depot = (rng.randrange(n), rng.randrange(n))
    grid[depot[0]][depot[1]] = "."
    candidates = [cell for cell in reachable_cells(grid, depot) if cell != depot]
    k = min(rng.randint(30, 80), len(candidates))
    trees = rng.sample(candidates, k)
    budget = rng.randint(2 * n, 8 * n)
    lines = [f"{n} {budget} {k}", f"{depot[0]} {depot[1]}"]
    lines += ["".join(row) for row in grid]
    lines += [f"{r} {c} {rng.randint(1, 100)}" for r, c in trees]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python gen.py SEED")
    sys.stdout.write(generate(int(sys.argv[1])))
