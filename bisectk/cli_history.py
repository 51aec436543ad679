"""What `bisect` and `triage` share: the refs and pathspec read from their words, and what they
say of the repository (ambiguous refs, a `git bisect` of the user's, where the command runs, what
the runs changed)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Optional

from bisectk.cli_common import fail, out, say_warning


def history_ends(good: list[str], bad: list[str], find_fix: bool,
                 hint: Callable[[], str] = lambda: "") -> tuple[list[str], str, tuple[str, str]]:
    """(the old side's refs, the new end's ref, the options that named them) from --good/--bad:
    a regression goes from the goods (all count) to one bad; a fix (--find-fix) from the bads,
    where it fails, to one good, where it passes again. The new end defaults to HEAD, as `git
    bisect bad` (`git bisect fixed`) without a commit marks HEAD. `hint`: words for a missing
    old side (the marks of a `git bisect` of the user's in progress)."""
    olds, news, names = (bad, good, ("--bad", "--good")) if find_fix else (good, bad, ("--good", "--bad"))
    if not olds:
        fail(f"give {names[0]} REF" + (" (--find-fix: --bad is the older commit, where it fails, --good the newer "
                                       "one, where it passes; it defaults to HEAD)" if find_fix else
                                       " (and --bad REF, which defaults to HEAD)" + hint()))
    news = news or ["HEAD"]
    if len(news) > 1:
        fail(f"{names[1]} is given {len(news)} times: one {names[1]} commit ({names[0]} may be repeated"
             + (", and --find-fix looks from the failing --bad commits to one passing --good)" if find_fix else ")"))
    return olds, news[0], names


def history_targets(targets: Optional[list[str]], command_given: bool,
                    command: Callable | None = None) -> tuple[Optional[Path], list[str]]:
    """(SPEC, PATHSPEC) from the positional words: with --run, --pytest or --manual they are all
    the pathspec (git's `-- PATHSPEC...`, with or without the `--`); else the first is the spec.
    `command`: the typer command function, whose options are refused among the words."""
    words = list(targets or [])
    if command is not None:
        _no_options_among(words, command)
    if command_given or not words:
        return None, words
    return Path(words[0]), words[1:]


def _no_options_among(words: list[str], command: Callable) -> None:
    """Refuse an option of `command` among the positional words: click passes a word that starts
    with '-' there only after `--`, where every word is git's pathspec, so `-- src --run ./t.sh`
    read `--run` as a path (and `src` as the SPEC). A path that merely starts with '-' stays one."""
    import inspect

    import typer.models
    names = {"-h", "--help"}
    for name, param in inspect.signature(command).parameters.items():
        info = param.default
        if isinstance(info, typer.models.OptionInfo):
            decls = info.param_decls or ("--" + name.replace("_", "-"),)
            names.update(d for decl in decls for d in decl.split("/") if d.startswith("-"))
    for word in words:
        name = word.split("=", 1)[0]
        if name in names:
            fail(f"{name} comes after '--', where every word is git's pathspec (a path): put the options "
                 f"before it, as in --run CMD -- PATHSPEC")


def say_ambiguous(root: Path, olds: list[str], new: str, names: tuple[str, str]) -> None:
    """A warning for each ref whose name git reads as one of several (a tag and a branch of one
    name): git's own warning, which bisectk had dropped with its stderr (spaces/refnames.py)."""
    from bisectk.spaces.refnames import ambiguities
    for line in ambiguities(root, [*((names[0], g) for g in olds), (names[1], new)]):
        say_warning(line)


def say_your_bisect(root: Path, olds: list[str], new: str, names: tuple[str, str]) -> None:
    """A warning where --good or --bad names HEAD while a `git bisect` of the user's has moved it
    (spaces/yourbisect.py): HEAD is then that bisection's commit, not the user's branch."""
    from bisectk.spaces.yourbisect import head_note
    note = head_note(root, [*((names[0], g) for g in olds), (names[1], new)])
    if note:
        say_warning(note)


def pytest_words(pytest_id: Optional[str]) -> list[str]:
    """--pytest's node ids and options, split as pytest gets them (none without --pytest)."""
    from bisectk.engine.subject import pytest_args
    return pytest_args(pytest_id) if pytest_id else []


def pytest_in_tree(pytest_id: Optional[str], root: Path) -> Optional[str]:
    """--pytest's value with a node id by its absolute path into the work tree read as typed
    relative (spaces/command.py node_ids_in_tree), written back as pytest_words splits it; the
    value as given where nothing changed."""
    if not pytest_id:
        return pytest_id
    import shlex
    from bisectk.spaces.command import node_ids_in_tree, one_path
    pytest_id = one_path(pytest_id, Path.cwd(), node=True)     # `$PWD/tests/test v.py::t`: one node id
    words = pytest_words(pytest_id)
    out = node_ids_in_tree(words, user_cwd=Path.cwd(), root=root)
    return shlex.join(out) if out != words else pytest_id


def say_command(files, spec, sub: Path, root: Path | None = None) -> None:
    """Where the command runs and which copy of each file it names: the user's file, or each
    commit's own (said when the user has a copy: one that only the tree has did not run); and a
    post-checkout hook of the user's, which git bisect would run at each commit and bisectk does not."""
    if root is not None:
        from bisectk.spaces.checkout import post_checkout_hook
        hook = post_checkout_hook(root)
        if hook is not None:
            out.print(f"hooks: your post-checkout hook {hook} does not run in bisectk's worktrees (git bisect runs it "
                      "at each checkout): what a run needs of it, make in --build", markup=False)
    if spec is None and str(sub) != ".":
        out.print(f"runs in each commit's {sub}/, where the command was typed", markup=False)
    from bisectk.report.history import command_lines
    for f in files:
        if f.use == "tree" and f.state != "tracked, not in your directory":
            out.print(f"command: {f.word} is tracked: each commit's own {f.path} " + ("runs" if f.runs else "is named"),
                      markup=False)
    for line in command_lines([f.to_dict() for f in files if f.use != "tree"]):
        out.print(line, markup=False)


def checkout_path(root: Path, bad_sha: str, spec, local: bool) -> tuple[tuple[tuple[int, str], ...], str]:
    """(PATH's directories in the user's checkout that git tracks, the PATH they are in): each
    commit's own directory takes each one's place on the runs' PATH (spaces/checkout.py
    path_dirs), as `git bisect run` finds each commit's programs there. None where the spec sets
    PATH itself, or the runs are on other hosts."""
    import os
    from bisectk.spaces.checkout import path_dirs
    path = os.environ.get("PATH", "")
    if not local or "PATH" in spec.env:
        return (), path
    return path_dirs(root, ("HEAD", bad_sha), path), path


def say_path(dirs, path: str) -> None:
    """A line for each PATH directory of the checkout that each commit's own replaces."""
    import os
    entries = path.split(os.pathsep)
    for i, rel in dirs:
        own = "tree" if rel == "." else f"{rel}/"
        out.print(f"PATH: {entries[i]} is in your checkout: each commit's own {own} takes its place on the runs' "
                  "PATH, as git bisect run finds its programs there", markup=False)


def say_shared(before, root: Path) -> None:
    """A warning when the runs changed what the worktrees share with the user's checkout
    (spaces/shared.py): refs, the stash, the config, the list of worktrees."""
    from bisectk.spaces.shared import changes, snapshot
    said = changes(before, snapshot(root, Path(before["git_dir"])) if before else None)
    if said:
        say_warning(f"the runs changed your repository: {'; '.join(said)}. Each commit runs in a worktree of "
                  f"its own, but worktrees share refs, the stash, the config and the list of worktrees with your "
                  f"checkout (as under git bisect run): a test's own git commands reach them")
