"""Black-box minimisation: find a low value of an unknown function within a budget of calls."""

import numpy as np


# EVOLVE-BLOCK-START
def minimize(f, dim, lower, upper, budget, seed):
    """Search for the minimum of `f` (a function of a length-`dim` numpy array) inside the box
    [lower, upper]^dim, calling it at most `budget` times. Returns the best point found."""
    rng = np.random.default_rng(seed)
    best_x, best_value = None, np.inf
    for _ in range(budget):
        x = rng.uniform(lower, upper, size=dim)
        value = f(x)
        if value < best_value:
            best_x, best_value = x, value
    return best_x
# EVOLVE-BLOCK-END
