"""How a row is cut into tiles."""

TILE = 64   # columns per tile


def tile_spans(n, tile=TILE):
    """(start, end) of each tile of a row of n columns; the last tile may be short."""
    return [(s, min(s + tile, n)) for s in range(0, n, tile)]
