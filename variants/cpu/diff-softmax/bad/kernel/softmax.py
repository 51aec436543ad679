"""Online softmax over tiles: a running max `m`, a running sum of weights `s` and a running
weighted sum `acc`, rescaled when a tile raises the max (the real kernel's epilogue order)."""
import math

from .tiles import tile_ranges


def row_softmax_sum(row, vals):
    m, s, acc = -math.inf, 0.0, 0.0
    for start, end in tile_ranges(len(row)):
        m_new = max(m, max(row[start:end]))
        scale = math.exp(m - m_new)        # shrink what was summed under the old max
        s, acc = s * scale, acc
        for x, v in zip(row[start:end], vals[start:end]):
            w = math.exp(x - m_new)
            s += w
            acc += w * v
        m = m_new
    return acc / s
