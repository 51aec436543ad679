"""A tiled online-softmax reduction (a CPU stand-in for one row of an attention kernel)."""
from .softmax import row_softmax_sum

__all__ = ["row_softmax_sum"]
