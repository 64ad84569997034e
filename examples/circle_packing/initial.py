"""Circle packing: place 26 circles in the unit square, maximising the sum of their radii."""

import numpy as np

N_CIRCLES = 26


# EVOLVE-BLOCK-START
def construct_packing():
    """Return (centers, radii): centers is a (26, 2) array, radii a (26,) array."""
    centers = []
    # One circle in the middle, then two rings around it.
    centers.append([0.5, 0.5])
    for i in range(8):
        angle = 2 * np.pi * i / 8
        centers.append([0.5 + 0.2 * np.cos(angle), 0.5 + 0.2 * np.sin(angle)])
    for i in range(17):
        angle = 2 * np.pi * i / 17
        centers.append([0.5 + 0.4 * np.cos(angle), 0.5 + 0.4 * np.sin(angle)])
    centers = np.clip(np.array(centers), 0.01, 0.99)
    radii = compute_radii(centers)
    return centers, radii


def compute_radii(centers):
    """Largest radii that keep every circle inside the square and apart from the others."""
    n = len(centers)
    radii = np.minimum.reduce([centers[:, 0], centers[:, 1], 1 - centers[:, 0], 1 - centers[:, 1]])
    for i in range(n):
        for j in range(n):
            if i != j:
                distance = np.linalg.norm(centers[i] - centers[j])
                radii[i] = min(radii[i], distance / 2)
    return radii * 0.9
# EVOLVE-BLOCK-END


def run_packing():
    centers, radii = construct_packing()
    return centers, radii, float(np.sum(radii))


if __name__ == "__main__":
    _, _, total = run_packing()
    print(f"sum of radii: {total:.4f}")
