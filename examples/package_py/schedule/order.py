"""The order in which the jobs are placed on the machines."""

# EVOLVE-BLOCK-START
def job_order(times: list[float]) -> list[int]:
    """The indices of all jobs, each once, in the order they are placed."""
    return list(range(len(times)))
# EVOLVE-BLOCK-END
