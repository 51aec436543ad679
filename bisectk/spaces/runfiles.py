"""What a bisection's commands run, resolved together: --run, --build, --pytest's test files, and
the untracked files beside the user's scripts.

Each command line is resolved on its own (spaces/command.py); this module puts --run, --build and
--pytest together as bisect and triage take them, adds the untracked files beside each of the
user's files that runs (spaces/yours.py beside, bounded), and says what a commit must have
(`needed`) and what is copied into each commit's tree (`carried`). It sits apart from
spaces/command.py so that command.py imports nothing of yours.py, and yours.py may read
command.py's facts without an import circle (tests/core/test_layers.py).

Abstractions
------------
resolve_commands -- --run and --build together, as bisect and triage take them, with --pytest's
                    test files (spaces/command.py resolve_pytest) and the untracked files beside
                    the user's scripts: the rewritten commands and their CommandFiles.
needed           -- the tree's files among them that a commit must have (CommitSpace.needed).
carried          -- the user's files to copy into each commit's tree (CommitSpace.carry).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from bisectk.spaces.checkout import checkout_build
from bisectk.spaces.command import CommandFile, one_path, resolve_command, resolve_pytest, unique_files
from bisectk.spaces.shellwords import pytest_words, split_command
from bisectk.spaces.yours import MAX_BESIDE, MAX_BESIDE_BYTES, Carried, beside


def resolve_commands(run_cmd: str | None, build: str | None, *, user_cwd: Path, root: Path,
                     commit: str, olds: Sequence[str] = (), pytest: Sequence[str] = (),
                     copy: bool = True) -> tuple[str | None, str | None, list[CommandFile]]:
    """--run and --build as bisect and triage read them: each refused if it builds the checkout
    (checkout_build), else resolved (resolve_command); `pytest`, --pytest's words (node ids and
    options, engine/subject.py pytest_args): their test files (resolve_pytest);
    then the untracked files beside the user's files that run (spaces/yours.py beside). The
    rewritten commands and their files. `copy`: as resolve_command's (False: nothing is copied)."""
    files: list[CommandFile] = []
    out = []
    # `--run "$PWD/t.sh"` under `my proj's`: the path, one word
    run_cmd, build = (one_path(text, user_cwd) if text else text for text in (run_cmd, build))
    for text, option in ((run_cmd, "--run"), (build, "--build")):
        if text:
            checkout_build(text, option, user_cwd=user_cwd, root=root)
            text, found = resolve_command(text, option, user_cwd=user_cwd, root=root, commit=commit, olds=olds,
                                          copy=copy)
            files += found
        out.append(text)
    pytest = [*pytest, *(pytest_words(split_command(run_cmd, "--run")) if run_cmd else ())]
    if pytest and copy:
        files = unique_files(files + resolve_pytest(pytest, user_cwd=user_cwd, root=root, commit=commit, olds=olds))
    return out[0], out[1], files + _beside(files, user_cwd, root) + _edited(files, user_cwd, root)


def _beside(files: list[CommandFile], user_cwd: Path, root: Path) -> list[CommandFile]:
    """The untracked files beside the user's files that run, copied with them (spaces/yours.py);
    or, past its bounds, one CommandFile of use "left" saying how many were not."""
    running = {f.copy: f for f in files if f.copy and f.runs}
    found, over = beside(root, list(running), [f.copy for f in files if f.copy])
    if over is not None:
        n, size = over
        first = next(iter(running.values()))
        return [CommandFile(first.word, "left", str(Path(first.path).parent),
                            f"{n} untracked file{'s' if n != 1 else ''} beside it, {size} bytes: more than "
                            f"{MAX_BESIDE} files or "
                            f"{MAX_BESIDE_BYTES >> 20} MiB, so none is copied")]
    by_dir = {os.path.dirname(rel): f for rel, f in running.items()}
    return [CommandFile(os.path.relpath(root / rel, user_cwd), "yours", str(root / rel),
                        f"untracked, beside {by_dir[os.path.dirname(rel)].word}", False, rel) for rel in found]


EDITED = "modified in your checkout, named by "     # the state of an edited file a script names: not copied


def _edited(files: list[CommandFile], user_cwd: Path, root: Path) -> list[CommandFile]:
    """The tracked files the user has edited (`M lib.sh`) that a script of theirs that runs names
    or sources (contents.named_files), in its own directory: not copied (each commit's own runs,
    the commit's content being what is under test), but said, as git bisect run's checkout would
    carry the edit to every commit whose file it is made on, and its answer can differ."""
    from bisectk.contents import named_files
    from bisectk.spaces.yours import edited_beside
    running = {f.copy if f.use == "yours" else f.path: f for f in files
               if f.runs and (f.use == "yours" and f.copy or f.use == "tree")}
    edited = edited_beside(root, list(running))
    out = []
    for rel, f in running.items():
        named = {os.path.realpath(p if os.path.isabs(p) else root / os.path.dirname(rel) / p)
                 for p in named_files([[str(root / rel)]], root / os.path.dirname(rel))}
        out += [CommandFile(os.path.relpath(root / e, user_cwd), "edited", str(root / e), EDITED + f.word)
                for e in edited if os.path.dirname(e) == os.path.dirname(rel)
                and os.path.realpath(root / e) in named]
    return out


def carried(files: Sequence[CommandFile]):
    """The files to copy into each commit's tree (spaces/yours.py Carried), one per path."""
    return list({f.copy: Carried(f.copy, f.path, beside=f.state.startswith("untracked, beside"))
                 for f in files if f.copy and f.use == "yours"}.values())


def needed(files: list[CommandFile]) -> tuple[str, ...]:
    """The tree's files a commit must have to run the command (CommitSpace.needed): each commit's
    own copy of the program or of the script an interpreter runs."""
    return tuple(f.path for f in files if f.use == "tree" and f.runs)
