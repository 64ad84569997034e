"""Schedule jobs on identical machines: the order jobs are placed in, then the placement."""

from .assign import assign_jobs
from .order import job_order


def solve(times: list[float], machines: int) -> list[int]:
    """The machine (0 .. machines-1) of each job."""
    return assign_jobs(times, job_order(times), machines)
