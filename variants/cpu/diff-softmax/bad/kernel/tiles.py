"""How a row is cut into tiles."""

TILE = 128  # columns per tile (the real kernel's tile)


def tile_ranges(n, tile=TILE):
    """(start, end) of each tile of a row of n columns; the last tile may be short."""
    return [(s, min(s + tile, n)) for s in range(0, n, tile)]
