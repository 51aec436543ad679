"""`python -m bisectk` and the `bisectk` console script: a `bisect` command's history walk begins
(spaces/early.py) before the CLI and its libraries load."""

import sys


def main() -> None:
    from bisectk.spaces import early
    early.start(sys.argv[1:])
    from bisectk.cli import entry
    entry()


if __name__ == "__main__":
    main()
