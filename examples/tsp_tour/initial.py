"""A short closed tour through points in the unit square (the travelling salesman problem)."""

import numpy as np


# EVOLVE-BLOCK-START
def solve_tour(points):
    """Return a tour: a permutation of range(len(points)), visited in that order and closed
    back to the first point. Nearest neighbour: always go to the closest unvisited point."""
    n = len(points)
    unvisited = set(range(1, n))
    tour = [0]
    while unvisited:
        last = points[tour[-1]]
        nearest = min(unvisited, key=lambda j: np.hypot(*(points[j] - last)))
        tour.append(nearest)
        unvisited.remove(nearest)
    return tour
# EVOLVE-BLOCK-END
