"""Runs in a commit's worktree that imported Python from the user's checkout instead.

`git bisect run` works in the user's checkout, so a package installed from it in editable mode
(`pip install -e .`) or named by PYTHONPATH follows every checkout. bisectk runs each commit in a
worktree of its own (the checkout stays as it was), and there the same install still points
Python at the checkout: every commit would run the checkout's code, the test's verdict would not
depend on the commit, and the endpoints would be refused for the wrong reason ("good fails too")
or, worse, a commit that changed only the tests would be named.

The runs' import records (run/imports.py) say it: a module file under the checkout (not under
its .git). Each such file's import root is the directory above its top-level package (the
highest directory with an `__init__.py` on the way up), or its own directory for a plain module;
the same directories of the worktree are put first on the runs' PYTHONPATH (CommitSpace
`python_roots`), ahead of the install's .pth entry or finder, and the endpoints are run again under
a memo namespace of their own. A run that still imports from the checkout (a test that puts the
checkout on sys.path itself) is a problem the command states, never a verdict. An interpreter
started with -I or -E records no imports (run/imports.py), so its runs are not seen.

Abstractions
------------
checkout_files -- the files git tracks that the runs imported from the checkout.
import_roots   -- their import roots, relative to the checkout.
redirect       -- put the worktree's roots first for the runs that follow, saying so.
still_leaking  -- the problem line when runs made after the redirect imported the checkout again.
"""

from __future__ import annotations

import os
from pathlib import Path

from bisectk.events import Note

SHOWN = 3   # files named in a message
MAX_ASKED = 500     # files of the checkout looked up in git's index (one command line)


def checkout_files(imported, checkout: Path) -> list[str]:
    """The files of `imported` that git tracks in the checkout (so each commit's worktree has its
    own copy): an untracked helper of the user's, imported by a test script kept outside
    history, is theirs to import from there."""
    root = os.path.join(os.path.realpath(checkout), "")
    git = os.path.join(root, ".git", "")
    under = sorted(f for f in imported if f.startswith(root) and not f.startswith(git))
    if not under:
        return []
    from bisectk.spaces.commits import SpaceError, run_git
    under = under[:MAX_ASKED]
    try:
        listed = run_git(root, "ls-files", "-z", "--", *(":(literal)" + f[len(root):] for f in under))
    except SpaceError:
        return []
    tracked = {root + rel for rel in listed.split("\0") if rel}
    return [f for f in under if f in tracked]


def import_roots(files, checkout: Path) -> list[str]:
    """The directories (relative to the checkout) from which `files` were imported as modules."""
    root = Path(os.path.realpath(checkout))
    found: list[str] = []
    for f in files:
        here = Path(f).parent
        top = None
        while here != root and (here / "__init__.py").is_file():
            top, here = here, here.parent
        base = (top.parent if top is not None else Path(f).parent)
        try:
            rel = base.relative_to(root).as_posix()
        except ValueError:
            continue
        if rel not in found:
            found.append(rel)
    return sorted(found, key=lambda r: (r.count("/"), r))


def redirect(runner, space, files: list[str]) -> str | None:
    """Put the commit's own copies of `files`' import roots first on the runs' PYTHONPATH; the
    runs that follow are kept apart from those made before (a namespace of the memo key).
    Returns what was done, in words (also said as a Note); None when no root could be told
    (nothing changed)."""
    checkout = Path(space.commits.repo)
    roots = import_roots(files, checkout)
    if not roots:
        return None
    space.python_roots = tuple(roots)
    runner.namespace += "#pythonpath=" + ",".join(roots)
    runner.imported_files.clear()
    shown = ", ".join(os.path.relpath(f, checkout) for f in files[:SHOWN]) + (" ..." if len(files) > SHOWN else "")
    where = ", ".join("its top directory" if r == "." else r for r in roots)
    text = (f"the runs imported your checkout's Python ({shown} from {checkout}), not the commit's: an editable "
            f"install (pip install -e) or PYTHONPATH points Python there; each commit's worktree ({where}) is put "
            "first on PYTHONPATH, and the endpoints ran again")
    runner.events.emit(Note(text))
    return text


def still_leaking(runner, space, command_files=()) -> str | None:
    """The problem line when the runs, redirected, still import the checkout. `command_files`
    (CommandFile dicts, spaces/command.py): a file of the user's that the command runs from
    their checkout (an untracked test script named from outside the repository, or with an
    executor elsewhere; one inside it is copied into each commit's worktree and runs there,
    spaces/yours.py) is why, where it is one: Python puts a script's own directory first on
    sys.path, and pytest loads the conftest.py files above a test file, from the checkout,
    whatever PYTHONPATH says."""
    checkout = Path(space.commits.repo)
    files = checkout_files(runner.imported_files, checkout)
    if not files:
        return None
    shown = ", ".join(os.path.relpath(f, checkout) for f in files[:SHOWN])
    root = os.path.join(os.path.realpath(checkout), "")
    mine = [f for f in command_files if f.get("use") == "yours" and not f.get("copy")
            and os.path.realpath(f["path"]).startswith(root)]
    if mine:
        return (f"the runs import Python from your checkout ({shown} in {checkout}), not from the commit being "
                f"tested: your {mine[0]['word']} ({mine[0]['state']}) runs from your checkout, and what it loads "
                "beside it comes from there (Python puts a script's directory first on sys.path; pytest loads the "
                "conftest.py files above a test): every commit would run your checkout's code; keep the script "
                "outside the repository, importing from its working directory (each commit's worktree)")
    return (f"the runs import Python from your checkout ({shown} in {checkout}), not from the commit being "
            "tested, even with the commit's copy first on PYTHONPATH (does the test put your checkout on sys.path "
            "itself?): every commit would run your checkout's code; run the test so that it imports the commit's "
            "sources, or uninstall the editable install of this repository while bisecting")
