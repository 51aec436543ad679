"""`--run CMD` as a git user means it: the files its relative paths name, found where git finds them.

`git bisect run ./test.sh` runs in the user's checkout, where an untracked test script stays put
while git checks each commit out around it. bisectk runs each commit in a worktree of its own,
which holds the commit's tracked files only. So each relative path of the command (the program
when it has a slash, any argument) is resolved once, before the search:

- it names a file in the user's current directory that the commit's tree does not provide as it
  is (untracked there, or modified): the user's file is copied into each commit's worktree at its
  own path and the word is left as typed (spaces/yours.py: what lies around it is then the
  commit's, as git bisect run sees it; the untracked files beside a script that runs go with it,
  bounded); where the directory is outside the repository, or the runs happen on other hosts
  (`copy` False), it is run by its absolute path instead;
- it names a file that the --bad commit's tree provides (the user's copy, if any, is the same, or
  is what their checkout's HEAD holds: not modified, only newer than --bad's): each commit's own
  copy is run, as git does;
- typed outside the repository (`--repo proj`), a word that climbs into it (`proj/ci/t.sh`) is
  read as the same path typed at the top level, where the command then runs, and rewritten so
  (`ci/t.sh`): each commit's own copy, or the user's copied, by the two rules above;
- otherwise it is left as typed (a program on PATH, a file that only some commits have).

Where it runs (spaces/checkout.py run_dir): in each commit's worktree, in the directory the
command was typed in. Typed at the repository's top level (git bisect's own place) that is the
worktree's root; typed in a subdirectory, it is that subdirectory of each worktree, so the
command sees what it saw when the user tried it there by hand (`cd kernels && ./check.sh` reading
`./ref.bin`). git itself gives no precedent there: 2.39 refuses to bisect from a subdirectory,
and later versions run the command from the top level, where a path typed in the subdirectory no
longer names anything.
Typed outside the repository (`--repo PATH`): the worktree's root.

A program without a slash (`python`, `make`) is looked up on PATH, as the shell does. Quoting,
spaces and arguments keep their meaning: the command is split with shell rules once, and its
words are given to the program as they are, never through a shell (as `git bisect run` quotes
each of its words; spaces/shellwords.py). Shell syntax in the line (`&&`, `|`, a redirection) is
refused before any word is resolved: a rewritten line would quote it into an argument. The
script of `sh -c '...'` is resolved word by word the same way where a word stands plain as a
program or an argument.

Abstractions
------------
CommandFile     -- one resolved path: the word as typed, which copy runs ("yours" or "tree";
                   "left": the untracked files beside a script, past yours.py's bounds, not
                   copied; "built": a compiled file git ignores, each commit's build's own), the user's path or the tree's, where a copy of the user's goes, and
                   the file's state ("untracked", "modified", "outside the
                   repository", "tracked" (your copy is the tree's), "tracked, not in your
                   directory", and for a file the commit lacks that git did track, "deleted:
                   tracked at OLD, not at NEW" or "tracked at HEAD, not at NEW"): facts for the
                   reports, which say which copy ran.
one_path        -- a line that is, whole, the path of a file with a space or a quote in it, as
                   one word (`--run "$PWD/t.sh"` under `my proj's`), as git bisect run takes it.
resolve_command -- the command line with its words resolved, and the CommandFiles (the line split
                   and its shell syntax refused by spaces/shellwords.py split_command).
resolve_pytest  -- the user's test files --pytest's node ids name, and the untracked conftest.py
                   files on their way.
node_ids_in_tree -- --pytest's node ids by an absolute path into the work tree, or typed outside
                   it, read as typed where the run is (each commit's test, as `git bisect run
                   pytest $PWD/...` finds it).
unique_files    -- one CommandFile per word and path.

--run, --build and --pytest together, and the files beside the user's scripts: spaces/runfiles.py
resolve_commands. Where in each worktree the command runs: spaces/checkout.py run_dir.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from bisectk.spaces.commits import SpaceError, git_ok, run_git, run_git_bytes
from bisectk.spaces.shellwords import script_index, shell_script_index, split_command


@dataclass(frozen=True)
class CommandFile:
    word: str        # as typed
    use: str         # "yours": the user's file, by absolute path; "tree": each commit's own copy;
                     # "built": a compiled file git ignores in the user's checkout, left to each commit's build
    path: str        # what runs: an absolute path, or the tree's file relative to the worktree root
    state: str       # untracked | modified | outside the repository | tracked | tracked, not in your directory
                     # | deleted: tracked at OLD, not at NEW | tracked at HEAD, not at NEW
    runs: bool = False   # the program, or the script an interpreter runs (`python t.py`, `sh t.sh`): a
                         # commit without it cannot run the command; any other path is an argument
    copy: str = ""       # "yours" inside the repository: copied into each commit's tree at this path
                         # (relative to its top level, spaces/yours.py) and run from there

    def to_dict(self) -> dict[str, str]:
        d = asdict(self)
        del d["runs"]
        if not self.copy:
            del d["copy"]
        return d


def _blob(root: Path, commit: str, rel: str) -> str | None:
    """The blob id of `rel` in `commit`'s tree (None when the tree has no file there)."""
    try:
        oid = run_git(root, "rev-parse", "--verify", "--quiet", f"{commit}:{rel}")
        return oid if run_git(root, "cat-file", "-t", oid) == "blob" else None
    except SpaceError:
        return None


def _short(root: Path, ref: str) -> str:
    """A commit's sha as the reports print it (10 digits), whatever ref named it."""
    try:
        return run_git(root, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")[:10] or ref
    except SpaceError:
        return ref


def _through_links(root: Path, commit: str, rel: str) -> str | None:
    """`rel` with the directory symlinks on its way resolved as a checkout of `commit` resolves
    them (`scripts/t.sh` with `scripts -> tools` tracked: `tools/t.sh`); None when no directory
    on the way is a link `commit` tracks as the user's checkout has it, or one leads out of the tree."""
    parts = rel.split("/")
    at, linked = "", False
    for part in parts[:-1]:
        step = f"{at}/{part}" if at else part
        if os.path.islink(root / step):
            blob = _blob(root, commit, step)
            if blob is None or not _same(root, root / step, blob):
                return None             # the user's own link, or another target than the commit's
            step = os.path.normpath(os.path.join(os.path.dirname(step), os.readlink(root / step)))
            if step.startswith("..") or os.path.isabs(step):
                return None
            linked = True
        at = "" if step == "." else step
    if not linked:
        return None
    return f"{at}/{parts[-1]}" if at else parts[-1]


def _in_submodule(root: Path, commit: str, rel: str) -> tuple[str, str] | None:
    """(the submodule's path, `rel` inside it) when `rel` lies in a submodule `commit`'s tree
    records (a gitlink, where the tree holds no blob); None otherwise."""
    parts = rel.split("/")
    prefixes = ["/".join(parts[:k]) for k in range(1, len(parts))]
    if not prefixes:
        return None
    try:
        out = run_git(root, "--literal-pathspecs", "ls-tree", "-z", commit, "--", *prefixes)
    except SpaceError:
        return None
    for entry in out.split("\0"):
        meta, _, path = entry.partition("\t")
        if meta.startswith("160000 ") and rel.startswith(path + "/"):
            return path, rel[len(path) + 1:]
    return None


def one_path(text: str, cwd: Path, node: bool = False) -> str:
    """`text` (a --run or --build line) quoted into one word where it is, whole, the path of a
    file with a space or a quote in it, and the shell reading would not run a file: it fails (an
    unpaired quote) or its first word names nothing. `git bisect run "$PWD/t.sh"` in a directory
    named `my proj's` passes that word as typed, where the shell reading ran '.../my', or stopped
    at its quote. A path without a slash is a PATH lookup for git too, and left as typed; so is
    every other line (unchanged). `node`: `text` is --pytest's, whose file is the part before
    `::` (`$PWD/tests/test v.py::test_v`)."""
    whole = text.strip()
    path = whole.split("::", 1)[0] if node else whole
    if ("/" not in path and not node) or not re.search(r"[\s'\"\\]", path) or not os.path.isfile(Path(cwd, path)):
        return text
    try:
        first = shlex.split(whole)[0]
    except (ValueError, IndexError):
        return shlex.quote(whole)
    if os.path.lexists(Path(cwd, first)) if "/" in first else shutil.which(first):
        return text         # the shell's reading runs something: the user's quoting is taken as typed
    return shlex.quote(whole)


def _pathlike(word: str, first: bool) -> bool:
    if not word or word.startswith("-") or os.path.isabs(word) or "\n" in word or len(word) > 1024:
        return False
    return "/" in word if first else True   # the program: a PATH lookup unless it has a slash


def resolve_command(text: str, option: str, *, user_cwd: Path, root: Path, commit: str,
                    olds: Sequence[str] = (), copy: bool = True) -> tuple[str, list[CommandFile]]:
    """`text` (a --run or --build command line) with its relative paths resolved against the
    user's directory and the `commit`'s tree; the rewritten line (split by the same shell rules
    gives the resolved words) and what was resolved. The script of `sh -c SCRIPT` has its words
    resolved as well (_resolve_script), so that the form a refused `&&` asks for runs the user's
    untracked script as a plain command would. `olds`: the other end's commits (the goods), which
    say that a file of the user's that `commit` lacks was deleted on the way, not never tracked.
    `copy`: the user's files inside the repository are copied into each commit's tree (their
    words stay as typed); False, they are named by their absolute paths (a remote executor)."""
    argv = split_command(text, option)   # shell syntax refused before a rewrite could quote it into a word
    resolver = _Resolver(user_cwd, root, commit, olds, copy)
    inner, script = shell_script_index(argv), script_index(argv)
    out = [_resolve_script(word, resolver) if k == inner else resolver.word(word, k == 0, k == script)
           for k, word in enumerate(argv)]
    if (makefile := _makefile(argv, resolver)) is not None:
        resolver.files.append(makefile)
    # a word rewritten (the user's file by its absolute path): the line as the words now read
    return (shlex.join(out) if out != argv else text), unique_files(resolver.files)


def unique_files(files: list[CommandFile]) -> list[CommandFile]:
    """One CommandFile per word and path (`./t.sh > log && ./t.sh x` names one file twice), a
    file that runs anywhere in the line running."""
    first: dict[tuple[str, str], CommandFile] = {}
    for f in files:
        had = first.setdefault((f.word, f.path), f)
        if had is not f and f.runs and not had.runs:
            first[(f.word, f.path)] = replace(had, runs=True)
    return list(first.values())


_MAKES = frozenset({"make", "gmake"})
_MAKEFILES = ("GNUmakefile", "makefile", "Makefile")      # in the order make looks for them
_MAKEFILE_OPTIONS = ("-f", "--file", "--makefile", "-C", "--directory")


def _makefile(argv: list[str], resolver: _Resolver) -> CommandFile | None:
    """The makefile `make` runs though the command names none (`make test`), as a file the tree
    must have: a commit without it is skipped, as git's 125 and as a missing script is, where
    make's own exit 2 ("No rule to make target") read as the failure. None for another program,
    a makefile or directory given (-f, -C), a user outside the repository, or no makefile in the
    commit where the user stands."""
    if not argv or os.path.basename(argv[0]) not in _MAKES or resolver.inside is None:
        return None
    if any(w.startswith(_MAKEFILE_OPTIONS) for w in argv[1:]):
        return None
    for name in _MAKEFILES:
        rel = os.path.normpath(str(resolver.inside / name))
        if _blob(resolver.root, resolver.commit, rel) is not None:
            return CommandFile(name, "tree", rel, "tracked", True)
    return None


class _Resolver:
    """One command's words resolved (see the module docstring), the CommandFiles collected."""

    def __init__(self, user_cwd: Path, root: Path, commit: str, olds: Sequence[str] = (), copy: bool = True):
        self.user_cwd = Path(os.path.abspath(user_cwd))
        self.copy = copy        # False: the user's files run by their absolute path (an executor elsewhere)
        self.root, self.commit, self.olds = root, commit, tuple(olds)
        try:
            self.inside: Path | None = self.user_cwd.relative_to(root)
        except ValueError:
            self.inside = None
        self.files: list[CommandFile] = []

    def word(self, word: str, first: bool, runs: bool) -> str:
        """The word as the command is to hold it. `first`: the program; `runs`: the program or
        the script an interpreter runs."""
        if os.path.isabs(word) and _pathlike(word.lstrip("/") or ".", False):
            return self._absolute(word, first, runs or first)
        if not _pathlike(word, first):
            return word
        runs = runs or first
        mine = Path(os.path.normpath(self.user_cwd / word))
        if self.inside is None and mine != self.root and mine.is_relative_to(self.root) and \
                ".git" not in mine.relative_to(self.root).parts:
            return self._climbed_in(word, mine, first, runs)
        # where the word points in the tree: the same file of the repository when the user is
        # inside it, else the word as the worktree root would read it
        rel = os.path.normpath(str(self.inside / word)) if self.inside is not None else os.path.normpath(word)
        in_tree = not rel.startswith("..") and rel != "."
        blob = _blob(self.root, self.commit, rel) if in_tree else None
        # a path through a directory symlink the tree tracks (`scripts -> tools`): the tree names
        # the file by the path the link leads to, and each commit's worktree has the link too
        real = _through_links(self.root, self.commit, rel) if blob is None and in_tree and \
            self.inside is not None else None
        if real is not None:
            blob = _blob(self.root, self.commit, real)
        # a file of a submodule: the tree records the submodule's commit, not the file, and each
        # commit's worktree checks the submodule out there; the user's clone of it says whether
        # their copy is committed (each commit's own runs) or theirs (edited, untracked)
        sub = _in_submodule(self.root, self.commit, rel) if blob is None and in_tree and self.inside is not None \
            and mine.is_file() else None
        sub_blob = _blob(self.root / sub[0], "HEAD", sub[1]) if sub is not None else None
        link = self._own_link(rel) if blob is None and sub is None and in_tree and self.copy else None
        if link is not None and mine.is_file():
            # through a directory link of the user's own (`mine -> tools`): git bisect run follows it
            # to each commit's files, so the link is what goes into each worktree, not the bytes
            self.files.append(CommandFile(word, "yours", str(self.root / link), "untracked link", False, link))
            return word
        if mine.is_file():
            # the tree's own copy runs when the user's file is the commit's, or the one their checkout
            # has committed (unmodified since HEAD: --bad older than HEAD may hold an older copy of it,
            # and git bisect runs each commit's, as the checkout moves under it)
            if blob is not None and (_same(self.root, mine, blob) or self._committed(real or rel, mine)) or \
                    sub_blob is not None and _same(self.root / sub[0], mine, sub_blob):
                self.files.append(CommandFile(word, "tree", rel, "tracked", runs))
                return word             # run where it was typed (run_dir): the word reads the same there
            if self.inside is None or not mine.is_relative_to(self.root):
                self.files.append(CommandFile(word, "yours", str(mine), "outside the repository"))
                return str(mine)        # run by its absolute path, as git bisect run runs it
            if blob is None and sub_blob is None and _built(self.root, mine):
                # what make wrote in the user's checkout (`build/k`): each commit's build makes its own
                self.files.append(CommandFile(word, "built", rel, BUILT))
                return word
            state = "modified" if blob is not None or sub_blob is not None else self._absent(rel)
            if not self.copy or ".git" in mine.relative_to(self.root).parts:
                # in the git directory (a script kept in .git/ to stay out of every checkout): no
                # tree has it, and git bisect run runs it from there too
                self.files.append(CommandFile(word, "yours", str(mine), state))
                return str(mine)
            # copied into each commit's tree at its own path (spaces/yours.py): the word reads the
            # same from the run's directory there, and what lies around it is the commit's
            self.files.append(CommandFile(word, "yours", str(mine), state, runs, mine.relative_to(self.root).as_posix()))
            self._behind_link(word, mine)
            return word
        if blob is not None:
            self.files.append(CommandFile(word, "tree", rel, "tracked, not in your directory", runs))
        return word


    def _absolute(self, word: str, first: bool, runs: bool) -> str:
        """An absolute path into the repository's work tree (`git bisect run $PWD/check.sh`):
        git bisect run reads it in the checkout, which git moves to each commit, so it names each
        commit's own file; it is read as the same path typed relative to where the command runs,
        by the rules above (each commit's copy, or the user's copied in). Before, it was left as
        typed: the user's checkout's file, and what it sources beside it, ran at every commit. A
        path elsewhere, or in the git directory, stays as typed."""
        mine = Path(os.path.realpath(os.path.dirname(word))) / os.path.basename(word)
        if os.path.realpath(word) == os.path.realpath(self.root):
            mine = self.root        # the checkout by a link to it (a shell's $PWD keeps the path typed)
        if not mine.is_relative_to(self.root) or ".git" in mine.relative_to(self.root).parts:
            return word
        if mine == self.root:       # the checkout itself (`make -C $PWD`): the worktree, from where it runs
            return os.path.relpath(mine, self.user_cwd) if self.inside is not None else "."
        if mine.is_dir() and self._yours_dir(mine.relative_to(self.root).as_posix()):
            return word             # a directory of the user's that the commit lacks: theirs, as under git
        first_file = len(self.files)
        if self.inside is None:     # typed outside the repository: the command runs at the root
            out = self._climbed_in(word, mine, first, runs)
        else:
            rel = os.path.relpath(mine, self.user_cwd)
            rel = f"./{rel}" if first and "/" not in rel else rel    # `t.sh` alone would be looked up on PATH
            out = self.word(rel, first, runs)
        # the reports say the word as typed: the absolute path
        self.files[first_file:] = [replace(f, word=word) for f in self.files[first_file:]]
        return out

    def _own_link(self, rel: str) -> str | None:
        """The first directory on `rel`'s way that is a symlink of the user's (git tracks none
        there at `commit` or at HEAD) leading to a place inside the tree by a relative target
        (`mine -> tools`): its path; None when there is none."""
        parts = rel.split("/")[:-1]
        for k in range(1, len(parts) + 1):
            step = "/".join(parts[:k])
            if not os.path.islink(self.root / step):
                continue
            if _blob(self.root, self.commit, step) is not None or _blob(self.root, "HEAD", step) is not None:
                return None
            target = os.readlink(self.root / step)
            inside = os.path.normpath(os.path.join(os.path.dirname(step), target))
            return None if os.path.isabs(target) or inside == ".." or inside.startswith("../") else step
        return None

    def _climbed_in(self, word: str, mine: Path, first: bool, runs: bool) -> str:
        """A word typed outside the repository that names a path inside it (`--repo proj --run
        'proj/ci/t.sh'`): read as the same path typed at the top level (where the command runs,
        run_dir), rewritten so (`./ci/t.sh`): each commit's own copy where the user's is the
        tree's, else the user's, copied into each worktree. Before, the tree was asked for
        `proj/ci/t.sh`, found nothing, and HEAD's file ran by its absolute path on every commit."""
        rel = mine.relative_to(self.root).as_posix()
        typed = f"./{rel}" if first and "/" not in rel else rel      # `t.sh` alone would be looked up on PATH
        blob = _blob(self.root, self.commit, rel)
        if mine.is_file():
            head = _blob(self.root, "HEAD", rel)
            if blob is not None and (_same(self.root, mine, blob) or head is not None and _same(self.root, mine, head)):
                self.files.append(CommandFile(word, "tree", rel, "tracked", runs))
                return typed
            state = "modified" if blob is not None else self._absent(rel)
            if not self.copy:
                self.files.append(CommandFile(word, "yours", str(mine), state))
                return str(mine)
            self.files.append(CommandFile(word, "yours", str(mine), state, runs, rel))
            self._behind_link(word, mine)
            return typed
        if blob is not None:
            self.files.append(CommandFile(word, "tree", rel, "tracked, not in your directory", runs))
            return typed
        # a directory of the commit's tree: the worktree's (one of the user's own stays theirs)
        return rel if mine.is_dir() and not self._yours_dir(rel) else word

    def _yours_dir(self, rel: str) -> bool:
        """Whether the user's directory at `rel` is theirs alone: one `commit`'s tree lacks and git
        does not ignore (a `data/` of theirs, which git bisect run's checkout keeps). An ignored one
        (`build/`) is each worktree's own, as its ignored files are kept there for the builds."""
        try:
            oid = run_git(self.root, "rev-parse", "--verify", "--quiet", f"{self.commit}:{rel}")
            if oid and run_git(self.root, "cat-file", "-t", oid) == "tree":
                return False
        except SpaceError:
            pass
        return not git_ok(self.root, "check-ignore", "-q", "--", rel)

    def _behind_link(self, word: str, mine: Path) -> None:
        """Where `mine`, a file link of the user's the command names (copied as a link, whose copy
        leads where the user's does: spaces/yours.py), leads to a file in the tree that the commit
        does not hold as the user has it (`t -> local/t.sh`, untracked; or modified): that file is
        copied too, as git bisect run finds it in the checkout. Before, the copied link led to
        nothing in the worktree ('cannot start ./t' at every commit)."""
        if not os.path.islink(mine):
            return
        real, top = Path(os.path.realpath(mine)), Path(os.path.realpath(self.root))
        if real == top or not real.is_relative_to(top) or ".git" in real.relative_to(top).parts or not real.is_file():
            return
        rel = real.relative_to(top).as_posix()
        blob = _blob(self.root, self.commit, rel)
        if blob is not None and (_same(self.root, real, blob) or self._committed(rel, real)):
            return          # the commit's own, as in the checkout
        state = "modified" if blob is not None else self._absent(rel)
        self.files.append(CommandFile(word, "yours", str(real), state, False, rel))

    def _absent(self, rel: str) -> str:
        """The state of the user's file at `rel`, which `commit`'s tree lacks: "untracked" only when
        git never had it at either end or at HEAD; a file the old end tracks was deleted on the way
        (a test script moved or dropped), one HEAD tracks is newer than `commit`."""
        new = self.commit[:10]
        for old in self.olds:
            if _blob(self.root, old, rel) is not None:
                return f"deleted: tracked at {_short(self.root, old)}, not at {new}"
        if _blob(self.root, "HEAD", rel) is not None:
            return f"tracked at HEAD, not at {new}"
        return "untracked"

    def _committed(self, rel: str, mine: Path) -> bool:
        """Whether the user's file is what their checkout's HEAD holds at `rel` (not modified)."""
        head = _blob(self.root, "HEAD", rel) if self.inside is not None and mine.is_relative_to(self.root) else None
        return head is not None and _same(self.root, mine, head)


_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
_OPERATOR_CHARS = frozenset("();&|<>")
_COMPUTED = frozenset("$`'\"*?[~\\")
_BOUNDARY = r"\s;&|()<>"


def _resolve_script(script: str, resolver: _Resolver) -> str:
    """A shell script's words resolved as a command's are, each simple command's program and the
    script an interpreter runs among them (`make && ./t.sh`, `python tests/t.py | tee log`); a
    word to rewrite is replaced where it stands as a plain word of the text (a word that is not,
    quoted there, stays as typed and is not reported as the user's). What the shell computes is
    left to it: words with `$`, quotes or globs, redirection targets, and everything after a `cd`
    (the paths after it are the shell's to read from another directory)."""
    try:
        lexer = shlex.shlex(script, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        tokens = list(lexer) + [";"]
    except ValueError:
        return script
    segment: list[str] = []
    rewrites: dict[str, tuple[CommandFile | None, str]] = {}
    k = 0
    while k < len(tokens):
        token = tokens[k]
        if token and set(token) <= _OPERATOR_CHARS and set(token) & {"<", ">"}:
            k += 1                      # a redirection (`>`, `2>&1`, `&>`): its file is the shell's to open
        elif token and set(token) <= _OPERATOR_CHARS:
            if segment and _resolve_segment(segment, resolver, rewrites):
                break                   # a `cd`: the rest runs elsewhere
            segment = []
        elif token.isdigit() and tokens[k + 1][:1] in ("<", ">"):
            pass                        # `2>`: a descriptor's number
        else:                           # a word the shell computes keeps its place (the program's index)
            segment.append("" if set(token) & _COMPUTED else token)
        k += 1
    for word, (found, new) in rewrites.items():
        pattern = rf"(?<![^{_BOUNDARY}]){re.escape(word)}(?=$|[{_BOUNDARY}])"
        script, n = re.subn(pattern, lambda _, new=new: shlex.quote(new), script)
        if n == 0 and found is not None:
            resolver.files.remove(found)
    return script


def _resolve_segment(words: list[str], resolver: _Resolver, rewrites: dict[str, tuple[CommandFile | None, str]]) -> bool:
    """One simple command of a shell script resolved into `rewrites`; True when it is a `cd`."""
    while words and _ASSIGNMENT.match(words[0]):
        words = words[1:]               # `A=1 ./t.sh`: the program follows the assignments
    if not words or not words[0]:
        return False
    cd = words[0] in ("cd", "pushd", "popd")
    # a `cd` into the work tree by its absolute path is read as the checkout's directory, as the other
    # words are; what follows it runs from there, and stays the shell's
    script = script_index(words)
    target = next((k for k, w in enumerate(words[1:], 1) if not w.startswith("-")), None) if cd else None
    for k, word in enumerate(words):
        if cd and not (k == target and os.path.isabs(word)):
            continue                    # `cd -P -- DIR`: its options, and a relative DIR, stay
        before = len(resolver.files)
        if word and (new := resolver.word(word, k == 0, k == script)) != word:
            # a directory rewritten (`/abs/checkout/tools` -> `tools`) is no file of the user's
            found = resolver.files[-1] if len(resolver.files) > before else None
            if shlex.quote(word) == word and word not in rewrites:
                rewrites[word] = (found, new)
            elif found is not None:
                resolver.files.remove(found)    # not rewritten: not the user's file in the run
    return cd


BUILT = "a compiled file git ignores: each commit's build makes its own, yours is not copied"


def _built(root: Path, path: Path) -> bool:
    """A compiled file (a NUL byte in its first 4 KiB, as an executable or object file has) that
    git ignores: what a build wrote in the user's checkout, not a script of theirs (one in an
    ignored `local/` is text); copied into each worktree, it would be up to date there for make,
    and every commit would run the checkout's build."""
    try:
        with open(path, "rb") as f:
            head = f.read(4096)
    except OSError:
        return False
    return b"\0" in head and git_ok(root, "check-ignore", "-q", "--", path.relative_to(root).as_posix())


def _same(root: Path, path: Path, blob: str) -> bool:
    """Whether the user's file holds what the commit's blob holds (`git hash-object`, no -w:
    nothing is written). A symlink's blob is its target's path, not the bytes it points to."""
    try:
        if path.is_symlink():
            return os.fsencode(os.readlink(path)) == run_git_bytes(root, "cat-file", "blob", blob)
        return run_git(root, "hash-object", "--", str(path)) == blob
    except SpaceError:
        return False


def node_ids_in_tree(args: Sequence[str], *, user_cwd: Path, root: Path) -> list[str]:
    """--pytest's words (split) with each node id's path into the repository's work tree read as
    the same path typed relative to where the command runs (spaces/checkout.py run_dir), as
    _Resolver reads --run's: an absolute one (`$PWD/tests/t.py::test_x`, as an IDE copies a
    test's id), which named the checkout's own file at every commit where `git bisect run pytest
    $PWD/...` finds each commit's; and a relative one typed outside the repository (`--repo proj
    --pytest proj/tests/t.py::x`), which named nothing at each worktree's top. Options, a path
    typed inside the repository (the run's directory is its counterpart), and a path elsewhere or
    in the git directory stay as typed; so do the values of -k, -m and -p (an expression, a
    marker, a plugin: `-k proj` typed above `proj/` is no path)."""
    from bisectk.spaces.checkout import run_dir
    user_cwd = Path(os.path.abspath(user_cwd))
    outside = not user_cwd.is_relative_to(root)
    here = root / run_dir(user_cwd, root)
    out: list[str] = []
    for arg in args:
        path, sep, rest = arg.partition("::")
        mine = Path(os.path.realpath(user_cwd / os.path.dirname(path))) / os.path.basename(path)
        if arg.startswith("-") or out[-1:] in (["-k"], ["-m"], ["-p"]) or not (outside or os.path.isabs(path)) or \
                not mine.is_relative_to(root) or ".git" in mine.relative_to(root).parts:
            out.append(arg)
        else:
            out.append(os.path.relpath(mine, here) + sep + rest)
    return out


def resolve_pytest(args: Sequence[str], *, user_cwd: Path, root: Path, commit: str,
                   olds: Sequence[str] = ()) -> list[CommandFile]:
    """The test files --pytest's node ids (`args`, split) name (`tests/test_k.py::test_x`) that
    are the user's (untracked, modified: copied into each commit's tree, as a script of --run
    is), and the untracked conftest.py files on the way from the repository's top level to each
    test file or directory named, whoever's the test file is (pytest loads them; git bisect run
    would find them in the checkout). The node ids stay as typed: from the run's directory of
    each worktree they name the copies."""
    resolver = _Resolver(user_cwd, root, commit, olds)
    dirs: list[str] = []
    for arg in args:
        path = arg.split("::", 1)[0]
        if not path or arg.startswith("-") or os.path.isabs(path) or "\n" in path:
            continue
        mine = Path(os.path.normpath(resolver.user_cwd / path))
        if resolver.inside is None or not mine.is_relative_to(root) or ".git" in mine.relative_to(root).parts:
            continue
        resolver.word(path, False, True)
        rel = mine.relative_to(root).as_posix()
        dirs.append(rel if mine.is_dir() else os.path.dirname(rel))
    files = [f for f in resolver.files if f.copy]
    for d in dict.fromkeys(dirs):
        parts = [p for p in d.split("/") if p and p != "."]
        for k in range(len(parts) + 1):
            rel = "/".join([*parts[:k], "conftest.py"])
            if any(g.copy == rel for g in files) or not (root / rel).is_file() or _blob(root, commit, rel) is not None:
                continue
            if resolver._absent(rel) == "untracked":
                files.append(CommandFile(os.path.relpath(root / rel, user_cwd), "yours", str(root / rel), "untracked",
                                         False, rel))
    return files
