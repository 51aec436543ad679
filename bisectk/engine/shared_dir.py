"""The directory `ablate --jobs K` runs share: what its runs write there.

Every run of a factor ablation starts in the spec's `cwd`, so K runs side by side share it. A
subject that writes a fixed path there (`out.bin`, `results/last.json`) has its file overwritten by
the run beside it, and what it reads back is another configuration's: failures that come and go,
filed as different failures or as an intermittent good endpoint. `Listing` is the directory's files
before the endpoints ran; `written` names those the runs created or changed, so the command can say
so once, before the search.
"""
from __future__ import annotations

import os
from pathlib import Path

from bisectk.contents import walk

SKIPPED = {".git", ".bisectk", "__pycache__", ".hg", ".svn"}   # bisectk's ledger and logs, Python's caches, VCS data
LIMIT = 20000       # files looked at: a huge tree is not walked (the check is a courtesy, not a verdict)


class Listing:
    """`ledger`: bisectk's own ledger, which `--ledger` may put in that directory; it and the run
    logs beside it are bisectk's writes, not the runs'."""

    def __init__(self, root: Path, ledger: Path | None = None):
        self.root = Path(os.path.abspath(root))
        self.ignored: set[str] = set()
        if ledger is not None:
            db = os.path.abspath(ledger)
            self.ignored = {db, *(db + end for end in ("-wal", "-shm", "-journal")),
                            os.path.join(os.path.dirname(db), "logs")}
        self.files = _walk(self.root, self.ignored)

    def written(self) -> list[str]:
        """Files (relative paths, sorted) created or changed since the listing was taken; none when
        either walk gave up."""
        if self.files is None:
            return []
        now = _walk(self.root, self.ignored)
        if now is None:
            return []
        return sorted(f for f, stat in now.items() if self.files.get(f) != stat)


def _walk(root: Path, ignored: set[str]) -> dict[str, tuple[int, int]] | None:
    files: dict[str, tuple[int, int]] = {}
    for top, dirs, names in walk(root):
        dirs[:] = [d for d in dirs if d not in SKIPPED and os.path.join(top, d) not in ignored]
        for name in names:
            path = os.path.join(top, name)
            if path in ignored:
                continue
            try:
                st = os.lstat(path)
            except OSError:
                continue
            files[os.path.relpath(path, root)] = (st.st_mtime_ns, st.st_size)
            if len(files) > LIMIT:
                return None
    return files


def collision_words(jobs: int, root: Path, written: list[str], shown: int = 3) -> str:
    names = ", ".join(written[:shown]) + (f" and {len(written) - shown} more" if len(written) > shown else "")
    return (f"warning: --jobs {jobs}: the endpoint runs wrote {names} in {root}, the directory every run "
            f"starts in: runs side by side may overwrite each other's files there, and read another "
            f"configuration's (failures that come and go); use --jobs 1, or write to a path of the run's own")
