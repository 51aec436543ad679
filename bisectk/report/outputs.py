"""The report files a command writes (--report, --html, --json-out, --junit): checked before the
first run, written after the result is printed.

A path that cannot be written, or that names what the command reads, is refused before any run:
found after a search of minutes, it lost the result, and a report written over the spec, the
subject's script or the ledger destroyed the user's file (the ledger's runs with it).

check_outputs -- one line (errors.BisectkError) for the first output that is `-` (stdout to many
                 tools, a file named '-' here), is a directory, cannot be
                 created (its nearest existing ancestor is no directory, or not writable), is one
                 of the command's inputs (`inputs`: the spec, the ledger and its journals, the files
                 the subject's command names), lies inside an input tree (`trees`: diff's GOOD and
                 BAD), is named by two options, or is where --report FILE.md puts its pictures
                 (FILE-figures/, made after the search: an --html there was lost to "Is a
                 directory", and a file of that name lost the debug log), or is the culprit patch
                 a --report or --html writes beside it (FILE-culprit.patch). A --report that is
                 no regular file (/dev/stdout, a pipe) gets no pictures folder (pictures_folder).
write_outputs -- call each writer; a write that fails still (a full disk, /dev/full) is a line
                 naming the option and the reason, after the result was printed.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable, Iterable
from pathlib import Path

from bisectk.errors import BisectkError

LEDGER_FILES = ("", "-wal", "-shm", "-journal")     # SQLite's database and its journals


def ledger_files(ledger: Path) -> list[Path]:
    return [Path(f"{ledger}{suffix}") for suffix in LEDGER_FILES]


def argv_files(argv: Iterable[str], *dirs: Path) -> list[Path]:
    """The existing files any word of a command (or the value of an option word NAME=FILE) names, absolute or
    relative to one of `dirs`: data files too (unlike contents.named_files, which keys a verdict by the program, its scripts and
    the sources they name, and leaves out what a run may rewrite)."""
    found = []
    for word in argv:
        if word.startswith("-") and "=" in word:    # an option word with its value (NAME=FILE): the value
            word = word.split("=", 1)[1]
        if not word or len(word) > 4096 or "\0" in word:
            continue
        for base in (dirs if not os.path.isabs(word) else (Path("/"),)):
            p = Path(base) / word
            try:
                if p.is_file():
                    found.append(p)
            except OSError:
                continue
    return found


def _same(a: Path, b: Path) -> bool:
    """One file, or one path where neither exists yet (a new ledger is made before the report)."""
    try:
        if a.exists() and b.exists():
            return os.path.samefile(a, b)
        if a.exists() or b.exists():
            return False
        return Path(os.path.abspath(a)).resolve() == Path(os.path.abspath(b)).resolve()
    except (OSError, RuntimeError):
        return False


def _real(path: Path) -> Path:
    """`path` absolute, through every link on the way to it (one that loops is left as it is:
    check_outputs refuses it)."""
    try:
        return Path(os.path.realpath(os.path.abspath(path)))
    except (OSError, RuntimeError):
        return Path(os.path.abspath(path))


def _loops(path: Path) -> bool:
    """Whether `path`, or a link on the way to it, is a symbolic link loop (the write would fail with
    ELOOP, and Path.resolve raises RuntimeError on it before Python 3.13)."""
    try:
        os.stat(path)
    except OSError as exc:
        return exc.errno == errno.ELOOP
    return False


def _nearest(path: Path) -> Path:
    p = path
    while not os.path.lexists(p) and p != p.parent:
        p = p.parent
    return p


def check_outputs(outputs: dict[str, Path | None], *, inputs: Iterable[tuple[Path, str]] = (),
                  trees: Iterable[Path] = (), stdout_taken: str = "") -> None:
    """Refuse the first output that cannot be written or names an input (module docstring), or,
    where `stdout_taken` names the option that prints a document on stdout (--json), one that is
    stdout: a parser of that document would find the file's text after it."""
    inputs, trees = list(inputs), [Path(t).resolve() for t in trees]
    seen: dict[Path, str] = {}
    for option, path in outputs.items():
        if path is None:
            continue
        if str(path) == "-":        # stdout to many tools; here it was a file named '-' (and its pictures folder, '-' then '-figures')
            raise BisectkError(f"{option} -: '-' is not stdout here (it would be a file named '-'): name a file, "
                               f"or /dev/stdout" + (" (--json prints the JSON document there)" if option == "--json-out" else ""))
        path = Path(path)
        absolute = Path(os.path.abspath(path))
        key = _real(absolute)       # one file by two spellings: a link to it, or to its directory
        if key in seen:
            raise BisectkError(f"{option} {path}: {seen[key]} names the same file; give each its own")
        seen[key] = option
        if path.is_dir():
            raise BisectkError(f"{option} {path}: is a directory; name a file in it")
        if stdout_taken and _is_stdout(path):
            raise BisectkError(f"{option} {path}: is stdout, where {stdout_taken} prints its document; the file would "
                               f"follow it there and the document would not parse: name a file")
        for given, what in inputs:
            if _same(path, given):
                raise BisectkError(f"{option} {path}: is {what}, which this command reads; writing the report "
                                   f"there would destroy it: name another file")
        if _loops(absolute):
            raise BisectkError(f"{option} {path}: its path goes through a symbolic link that loops (a link that "
                               f"leads back to itself); name another file")
        real = Path(os.path.realpath(absolute))     # a link's target: what the write will create
        for tree in trees:
            if real.is_relative_to(tree):
                raise BisectkError(f"{option} {path}: is inside {tree}, an input of this command; write it elsewhere")
        if path.exists():
            if not os.access(path, os.W_OK):
                raise BisectkError(f"{option} {path}: cannot be written (permission denied)")
            continue
        where = _nearest(real.parent)
        if not where.is_dir():
            raise BisectkError(f"{option} {path}: cannot be created: {where} is not a directory")
        if not os.access(where, os.W_OK | os.X_OK):
            raise BisectkError(f"{option} {path}: cannot be created: {where} is not writable")
    _check_figures(outputs)


def figures_folder(report: Path) -> Path:
    """Where --report FILE.md writes its pictures: FILE-figures/ beside it."""
    return Path(report).with_name(f"{Path(report).stem}-figures")


def patch_file(report: Path) -> Path | None:
    """Where --report FILE.md (or --html FILE.html) writes a culprit patch that holds bytes that are
    not UTF-8, as it is: FILE-culprit.patch beside it; None where the report has no folder beside it
    (pictures_folder)."""
    folder = pictures_folder(report)
    return None if folder is None else folder.with_name(f"{Path(report).stem}-culprit.patch")


SYSTEM_TREES = ("/dev", "/proc")     # the kernel's devices and processes: no folder of a user's


def pictures_folder(report: Path) -> Path | None:
    """figures_folder(report), or None where the log goes to no regular file (`--report
    /dev/stdout`, a pipe such as `>(cat)`, /dev/null) or is named through /dev or /proc
    (`--report /dev/stdout > log.md`): `/dev/fd/63-figures/` cannot be made, so the log was
    lost with its pictures, and as root `/dev/null-figures/` was made in /dev."""
    folder = figures_folder(report)
    where = os.path.realpath(os.path.abspath(folder.parent))
    if any(where == tree or where.startswith(tree + "/") for tree in SYSTEM_TREES):
        return None
    try:
        mode = os.stat(report).st_mode
    except OSError:         # not there yet: the write makes a regular file
        return folder
    return folder if stat.S_ISREG(mode) else None


def _check_figures(outputs: dict[str, Path | None]) -> None:
    """Refuse an output that is, or lies in, the --report's pictures folder, or is the culprit patch
    file a --report or an --html writes beside it (patch_file: any command's, as `bisectk report`
    writes a stored diff's); and a pictures folder that a file (or a link to one) already holds the
    place of, or a patch file's place that a directory holds (the report was lost after the search)."""
    report = outputs.get("--report")
    folder = pictures_folder(report) if report is not None else None
    if folder is not None:
        if os.path.lexists(folder) and not folder.is_dir():
            raise BisectkError(f"--report {report}: its pictures go in {folder}/, which is a file; name another report "
                               f"or move that file")
        inside = _real(folder)
        for option, path in outputs.items():
            if path is not None and option != "--report" and _real(path).is_relative_to(inside):
                raise BisectkError(f"{option} {path}: is where --report {report} writes its pictures ({folder}/); "
                                   f"name another file")
    for owner in ("--report", "--html"):
        given = outputs.get(owner)
        where = patch_file(given) if given is not None else None
        if where is None:
            continue
        if where.is_dir():
            raise BisectkError(f"{owner} {given}: a culprit patch that is not UTF-8 goes in {where}, which is a "
                               f"directory; name another report or move that directory")
        for option, path in outputs.items():
            if path is not None and option != owner and _same(Path(path), where):
                raise BisectkError(f"{option} {path}: is where {owner} {given} writes a culprit patch that is not "
                                   f"UTF-8 ({where}); name another file")


def _is_stdout(path: Path) -> bool:
    """`path` is the file this process's stdout is (/dev/stdout, /dev/fd/1, or its very file)."""
    try:
        return os.path.samestat(os.stat(path), os.fstat(1))
    except (OSError, ValueError):
        return False


def write_outputs(writers: Iterable[tuple[str, Path, Callable[[], object]]]) -> list[str]:
    """Run each (option, path, writer); the failures, one line each ('--report X: reason')."""
    failed = []
    for option, path, write in writers:
        try:
            Path(os.path.realpath(path)).parent.mkdir(parents=True, exist_ok=True)    # a link's target's
            write()
        except OSError as exc:
            failed.append(f"could not write {option} {path}: {exc.strerror or exc}")
    return failed
