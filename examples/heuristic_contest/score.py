"""Orchard Harvest scorer.

As a script: `python score.py INPUT OUTPUT` prints {"score": S} or {"error": "..."}.
As a module: score(input_text, output_text) returns the same dict (Cambrian imports it).
S = round(1e6 * collected value / total value); an invalid route is an error (WA).
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass

MOVES = {"U": (-1, 0), "D": (1, 0), "L": (0, -1), "R": (0, 1)}


@dataclass
class Case:
    n: int
    budget: int
    depot: tuple[int, int]
    grid: list[str]
    values: dict[tuple[int, int], int]


def parse_case(text: str) -> Case:
    tokens = text.split()
    n, budget, k = int(tokens[0]), int(tokens[1]), int(tokens[2])
    depot = (int(tokens[3]), int(tokens[4]))
    grid = tokens[5 : 5 + n]
    rest = tokens[5 + n :]
    values = {(int(rest[3 * i]), int(rest[3 * i + 1])): int(rest[3 * i + 2]) for i in range(k)}
    return Case(n, budget, depot, grid, values)


def score(input_text: str, output_text: str) -> dict:
    case = parse_case(input_text)
    tokens = output_text.split()
    if len(tokens) > 1:
        return {"error": f"expected one line of moves, got {len(tokens)} tokens"}
    route = tokens[0] if tokens else ""
    if len(route) > case.budget:
        return {"error": f"route has {len(route)} moves, more than the budget T={case.budget}"}
    r, c = case.depot
    collected: set[tuple[int, int]] = set()
    for step, move in enumerate(route, start=1):
        if move not in MOVES:
            return {"error": f"move {step} is {move!r}; only U, D, L, R are allowed"}
        dr, dc = MOVES[move]
        nr, nc = r + dr, c + dc
        if not (0 <= nr < case.n and 0 <= nc < case.n):
            return {"error": f"move {step} ({move}) leaves the grid from ({r}, {c})"}
        if case.grid[nr][nc] == "#":
            return {"error": f"move {step} ({move}) runs from ({r}, {c}) into a rock at ({nr}, {nc})"}
        r, c = nr, nc
        if (r, c) in case.values:
            collected.add((r, c))
    if (r, c) != case.depot:
        return {"error": f"the route ends at ({r}, {c}), not at the depot {case.depot}"}
    total = sum(case.values.values())
    gained = sum(case.values[cell] for cell in collected)
    return {"score": round(1_000_000 * gained / total)}


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: python score.py INPUT OUTPUT")
    with open(sys.argv[1]) as case_file, open(sys.argv[2]) as output_file:
        print(json.dumps(score(case_file.read(), output_file.read())))
