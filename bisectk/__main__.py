"""`python -m bisectk` and the `bisectk` console script: a `bisect` command's history walk begins
(spaces/early.py) before the CLI and its libraries load."""

import sys


def _open_pool(root: str, size: int):
    """The WorktreePool `bisect` opens (cli.py), for the first checkout begun early."""
    from bisectk.spaces.worktrees import WorktreePool
    return WorktreePool(root, size=size)


def main() -> None:
    from bisectk.spaces import early
    early.start(sys.argv[1:], _open_pool)
    from bisectk.cli import entry
    entry()


if __name__ == "__main__":
    main()
