"""A checkout filter whose program is not installed: git-lfs named in the config, absent on PATH.

`git lfs install` (often once, in a shared ~/.gitconfig) sets `filter.lfs.process = git-lfs
filter-process` and `filter.lfs.required = true`. On a machine or container without the git-lfs
program, every checkout of a commit with a file that `.gitattributes` gives `filter=lfs` fails
('external filter ... failed 127', 'smudge filter lfs failed'), git bisect's as bisectk's; the
reason said so in git's words, then "give --good a commit the test can run on", which no commit
with such a file is. `missing_tool` says which program is missing and what to do.

Abstractions
------------
missing_tool -- for a failed checkout's message: the words naming the filter's program that is not
                installed and what to do; "" when the filter's program is there (its own failure).
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
from pathlib import Path

from bisectk.spaces.promisor import EVERY_COMMIT

_FILTER = re.compile(r"(?:smudge filter|filter) '?([^'\s]+)'? failed")


def missing_tool(repo: Path | str, error: str) -> str:
    """'git-lfs is not installed ...' when the filter a checkout's `error` names runs a program
    that is not on PATH (git's exit 127 for it, or none found); "" otherwise."""
    from bisectk.spaces.commits import SpaceError, run_git
    m = _FILTER.search(error)
    if m is None:
        return ""
    name = m.group(1)
    for kind in ("process", "smudge"):
        try:
            command = run_git(repo, "config", "--get", f"filter.{name}.{kind}")
        except SpaceError:
            continue
        try:
            program = shlex.split(command)[0]
        except (ValueError, IndexError):
            return ""
        found = os.access(program, os.X_OK) if os.sep in program else shutil.which(program) is not None
        if found:
            return ""
        return (f"{program} is not installed (filter.{name}.{kind} runs `{command}` for the files .gitattributes "
                f"gives filter={name}), so {EVERY_COMMIT}: install {program}, or check the files out as stored "
                f"(`git config filter.{name}.required false`)")
    return ""
