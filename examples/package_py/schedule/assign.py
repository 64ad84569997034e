"""Placing the jobs, in the given order, on the machines."""

# EVOLVE-BLOCK-START
def assign_jobs(times: list[float], order: list[int], machines: int) -> list[int]:
    """The machine of each job (indexed like ``times``), placing the jobs in ``order``."""
    machine_of = [0] * len(times)
    for position, job in enumerate(order):
        machine_of[job] = position % machines
    return machine_of
# EVOLVE-BLOCK-END
