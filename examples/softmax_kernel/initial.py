"""Row-wise softmax of a 2-D float32 tensor, as torch.softmax(x, dim=-1), fast on a GPU."""

import torch


# EVOLVE-BLOCK-START
def softmax(x: torch.Tensor) -> torch.Tensor:
    """Softmax over the last dimension of a 2-D float32 tensor; returns a new tensor of the
    same shape, dtype and device."""
    row_max = x.max(dim=1, keepdim=True).values
    exps = torch.exp(x - row_max)
    return exps / exps.sum(dim=1, keepdim=True)
# EVOLVE-BLOCK-END
