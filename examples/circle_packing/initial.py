"""Circle packing: place 26 circles in the unit square, maximising the sum of their radii."""

import numpy as np

N_CIRCLES = 26


# EVOLVE-BLOCK-START
def construct_packing():
    """Return (centers, radii): centers is a (26, 2) array, radii a (26,) array."""
    centers = np.zeros((N_CIRCLES, 2))
    # One circle in the middle, a ring of 8 around it and an outer ring of 17.
    centers[0] = [0.5, 0.5]
    for i in range(8):
        angle = 2 * np.pi * i / 8
        centers[i + 1] = [0.5 + 0.3 * np.cos(angle), 0.5 + 0.3 * np.sin(angle)]
    for i in range(17):
        angle = 2 * np.pi * i / 17
        centers[i + 9] = [0.5 + 0.7 * np.cos(angle), 0.5 + 0.7 * np.sin(angle)]
    centers = np.clip(centers, 0.01, 0.99)
    radii = compute_max_radii(centers)
    return centers, radii


def compute_max_radii(centers):
    """Radii that keep every circle inside the square and apart from the others: each starts at
    its distance to the nearest wall, and every overlapping pair is shrunk in proportion."""
    n = centers.shape[0]
    radii = np.ones(n)
    for i in range(n):
        x, y = centers[i]
        radii[i] = min(x, y, 1 - x, 1 - y)
    for i in range(n):
        for j in range(i + 1, n):
            distance = np.sqrt(np.sum((centers[i] - centers[j]) ** 2))
            if radii[i] + radii[j] > distance:
                scale = distance / (radii[i] + radii[j])
                radii[i] *= scale
                radii[j] *= scale
    return radii
# EVOLVE-BLOCK-END


def run_packing():
    centers, radii = construct_packing()
    return centers, radii, float(np.sum(radii))


if __name__ == "__main__":
    _, _, total = run_packing()
    print(f"sum of radii: {total:.4f}")
