"""Online softmax over tiles: a running max `m`, a running sum of weights `s` and a running
weighted sum `acc`, rescaled whenever a tile raises the max (as flash attention does)."""
import math

from .tiles import tile_spans


def row_softmax_sum(row, vals):
    m, s, acc = -math.inf, 0.0, 0.0
    for start, end in tile_spans(len(row)):
        m_new = max(m, max(row[start:end]))
        scale = math.exp(m - m_new)        # shrink what was summed under the old max
        s, acc = s * scale, acc * scale
        for x, v in zip(row[start:end], vals[start:end]):
            w = math.exp(x - m_new)
            s += w
            acc += w * v
        m = m_new
    return acc / s
