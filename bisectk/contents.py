"""File contents as memo-key material: one file's digest, and the files a command runs, names or
sources (run/memokey.py puts them in the key through `Spec.fingerprint`).

Abstractions
------------
file_digest  -- one file's content hash, remembered by (size, mtime, inode, ctime) for the process.
walk         -- os.walk without recursion (a tree of any depth).
named_files  -- the files whose content a command's verdict depends on, as far as its argv and its
                scripts show: path -> digest.

Which files a command names (named_files)
-----------------------------------------
1. The program always counts, whatever its suffix: argv[0] when it is a path (it has a slash) to
   an existing file, and the script of a known interpreter (`bash check.bash`, `sh run`,
   `python3 -u t.py`, `perl t.pl`, `env FOO=1 node x.js`): the first argument after the
   interpreter's options (`-u`, `-x`, `-o OPT`, `-W ARG` are skipped; `-m module` names a module,
   not a file). Inline code (`sh -c '...'`, `python -c`, `perl -e`) is scanned as in 3.
2. Any other argument counts only when it has a source suffix (SOURCE_SUFFIXES) and names an
   existing file: an argument may name a data or output file that a run rewrites, and keying it
   would make every run a new key, so memoisation would never answer.
3. A counted text file (at most SCAN_BYTES, no NUL byte) is scanned for words that name an
   existing regular file, relative to the file's own directory, or the command's directory, or
   absolute: `"$(dirname "$0")/helper.sh"`, `source ./env.sh`, `python3 "$DIR/check.py"`,
   `#include "tile.cuh"`, `open("limit.txt")`. A word counts only when it holds a dot or a slash
   (bare words are commands and keywords); `$VAR/x` and `$(...)/x` are tried as `x`; a word right
   after a `>` redirection is an output, not an input, and so is one the script opens to write or
   append (`open("log.txt", "a")`, `Path("r.json").write_text(...)`, `tee -a run.log`, logging's
   `FileHandler("run.log")`, `basicConfig(filename="run.log")`), wherever else the script names
   it (`tail -1 run.log` reads what the run wrote): a run rewrites it, and a key holding it
   would miss at every command. Files found so count, data
   files too (they are named by the script, not by a run's argv), and are scanned in turn: at
   most SCAN_DEPTH levels and MAX_NAMED files in all. Directories are never followed.

This is a heuristic: a file a script names only through a computed string (`"${NAME}.sh"`), or a
module a program imports, is not found here. Python subjects' imports are recorded as they run
(run/imports.py); the subject's tree is keyed whole (run/memokey.py tree_digest).
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
from pathlib import Path

SOURCE_SUFFIXES = {".py", ".cu", ".cuh", ".c", ".cc", ".cpp", ".cxx", ".h", ".hpp", ".sh", ".mlir", ".ptx"}
MAX_HASHED_BYTES = 64 << 20   # a larger file counts by size and mtime only
SCAN_BYTES = 1 << 20          # a larger counted file is hashed, not scanned for the files it names
SCAN_DEPTH = 3
MAX_NAMED = 64
SKIP_PARTS = {".git", ".bisectk", "__pycache__"}
# what diff's scratch copy of a tree leaves out (spaces/treediff.py), and so what a tree's content
# digest skips (run/memokey.py): one set, or a hybrid's key could hold what its copy lacks
NOT_COPIED = frozenset({".git", "__pycache__", ".bisectk"})
VIRTUAL = ("/proc/", "/sys/", "/dev/")   # the kernel's files: their content is the moment's, not an input

_FILE_CACHE: dict[str, tuple[tuple, str]] = {}
_WORDS_CACHE: dict[tuple[str, str], tuple[str, ...]] = {}


def walk(top: str | os.PathLike):
    """os.walk(top) (top-down, links to directories listed but not entered, unreadable
    directories skipped), the same directories in the same order, but with a stack of its own:
    Python 3.11's os.walk recurses once per level, and a tree deeper than ~1,000 levels (a
    runaway `mkdir -p`, a test's) ended the command in an internal RecursionError. The caller may
    prune `dirnames` in place, as with os.walk."""
    stack = [os.fspath(top)]
    while stack:
        path = stack.pop()
        try:
            with os.scandir(path) as it:
                entries = list(it)
        except OSError:
            continue
        dirs, files = [], []
        for entry in entries:
            try:
                is_dir = entry.is_dir()
            except OSError:
                is_dir = False
            (dirs if is_dir else files).append(entry.name)
        yield path, dirs, files
        for name in reversed(dirs):
            child = os.path.join(path, name)
            if not os.path.islink(child):
                stack.append(child)


def file_digest(path: str | os.PathLike) -> str:
    """sha256 of a file's content ('missing' when it is not a readable file), remembered for the
    process by (size, mtime, inode, ctime): a file rewritten in place gets a new ctime. A FIFO, a
    socket or a device node is not read (a FIFO's read waits for a writer that may never come):
    'special'."""
    p = os.fspath(path)
    try:
        st = os.stat(p)
    except (OSError, ValueError):
        return "missing"
    if stat.S_ISFIFO(st.st_mode) or stat.S_ISSOCK(st.st_mode) or stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode):
        return "special"
    sig = (st.st_size, st.st_mtime_ns, st.st_ino, st.st_ctime_ns)
    hit = _FILE_CACHE.get(p)
    if hit and hit[0] == sig:
        return hit[1]
    if st.st_size > MAX_HASHED_BYTES:
        digest = f"size{st.st_size}-mtime{st.st_mtime_ns}"
    else:
        h = hashlib.sha256()
        try:
            with open(p, "rb") as f:
                for block in iter(lambda: f.read(1 << 20), b""):
                    h.update(block)
        except OSError:
            return "missing"
        digest = h.hexdigest()
    _FILE_CACHE[p] = (sig, digest)
    return digest


# -- interpreters ----------------------------------------------------------------------------
# family -> (options whose next argument is inline code, options that take a value, options
# whose next argument is a module: no script follows)
_FAMILIES: dict[str, tuple[frozenset[str], frozenset[str], frozenset[str]]] = {
    "shell": (frozenset({"-c"}), frozenset({"-o", "+o", "-O", "+O", "--rcfile", "--init-file"}), frozenset()),
    "python": (frozenset({"-c"}), frozenset({"-W", "-X", "-Q", "--check-hash-based-pycs"}), frozenset({"-m"})),
    "perl": (frozenset({"-e", "-E"}), frozenset(), frozenset()),
    "ruby": (frozenset({"-e"}), frozenset({"-I", "-r", "-C", "-E", "--encoding"}), frozenset()),
    "node": (frozenset({"-e", "--eval", "-p", "--print"}), frozenset({"-r", "--require", "--import", "--loader"}),
             frozenset()),
    "Rscript": (frozenset({"-e"}), frozenset(), frozenset()),
    "lua": (frozenset({"-e"}), frozenset({"-l"}), frozenset()),
    "php": (frozenset({"-r"}), frozenset({"-d", "-c"}), frozenset()),
    "julia": (frozenset({"-e", "-E", "--eval", "--print"}), frozenset({"-L", "--load", "-J"}), frozenset()),
    "tcl": (frozenset(), frozenset(), frozenset()),
}
_SHELLS = {"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "yash", "fish", "csh", "tcsh"}
_VERSIONED = re.compile(r"(python|pypy|perl|ruby|node|nodejs|lua|luajit|php|julia|tclsh|Rscript)[0-9.]*(?:-dbg)?$")


def _family(program: str) -> str | None:
    name = os.path.basename(program)
    if name in _SHELLS:
        return "shell"
    m = _VERSIONED.match(name)
    if not m:
        return None
    base = m.group(1)
    return {"pypy": "python", "nodejs": "node", "luajit": "lua", "tclsh": "tcl"}.get(base, base)


def _script(argv: list[str]) -> tuple[str | None, str | None]:
    """(the script an interpreter command runs, its inline code), each None when there is none."""
    while argv and os.path.basename(argv[0]) == "env":     # env [-i] [NAME=VALUE...] PROGRAM ...
        argv = argv[1:]
        while argv and (argv[0].startswith("-") or "=" in argv[0]):
            argv = argv[1:]
    family = _family(argv[0]) if argv else None
    if family is None:
        return None, None
    inline, valued, module = _FAMILIES[family]
    i = 1
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            return (argv[i + 1] if i + 1 < len(argv) else None), None
        if arg in module:
            return None, None
        if arg in inline or (family == "shell" and re.fullmatch(r"-[a-zA-Z]*c[a-zA-Z]*", arg)):
            return None, (argv[i + 1] if i + 1 < len(argv) else None)
        if arg in valued:
            i += 2
            continue
        if arg.startswith(("-", "+")) and arg not in ("-", "+"):
            i += 1
            continue
        return arg, None
    return None, None


# -- scanning --------------------------------------------------------------------------------
_WORD = re.compile(r"[\w.@%+,~/-]+")
_REDIRECT = re.compile(r"[0-9&]?>>?\s*['\"]?$")
# what a script writes by name: `open("log.txt", "a")`, `open('r.json', mode="w")`,
# `Path("out.txt").write_text(...)`, `| tee -a run.log`, logging's `FileHandler("run.log")` and
# `basicConfig(filename="run.log")`
_WRITTEN = re.compile(r"""\bopen\(\s*(['"])([^'"\n]{1,512})\1\s*,\s*(?:mode\s*=\s*)?[rbt]*['"][rbt+]*[wax]"""
                      r"""|\bPath\(\s*(['"])([^'"\n]{1,512})\3\s*\)\s*\.\s*write_(?:text|bytes)\b"""
                      r"""|\btee\s+(?:-\w+\s+)*(['"]?)([\w.@%+,~/-]{1,512})\5"""
                      r"""|FileHandler\(\s*(?:filename\s*=\s*)?(['"])([^'"\n]{1,512})\7"""
                      r"""|\bbasicConfig\([^)]*?\bfilename\s*=\s*(['"])([^'"\n]{1,512})\9""")


def _words(text: str) -> tuple[str, ...]:
    """The words of a script that may name a file (see the module docstring, 3.). A file it
    writes (`> out.txt`, `open("out.txt", "w")`) is its output wherever it names it: the
    `tail -1 run.log` after `>> run.log` reads what the run wrote."""
    found: dict[str, None] = {}
    written = {next(g for g in m.groups()[1::2] if g) for m in _WRITTEN.finditer(text)}
    for m in _WORD.finditer(text):
        word = m.group().rstrip(".,:")
        if not word or ("." not in word and "/" not in word) or len(word) > 512:
            continue
        if _REDIRECT.search(text, max(0, m.start() - 4), m.start()):
            written.add(word)
        found.setdefault(word, None)
    return tuple(w for w in found if w not in written)


def _text(path: str, digest: str) -> tuple[str, ...]:
    """The words of a counted file, () when it is binary or too large; remembered by content."""
    key = (path, digest)
    if key not in _WORDS_CACHE:
        words: tuple[str, ...] = ()
        try:
            if os.path.getsize(path) <= SCAN_BYTES:
                with open(path, "rb") as f:
                    data = f.read(SCAN_BYTES + 1)
                if b"\0" not in data:
                    words = _words(data.decode("utf-8", "replace"))
        except OSError:
            pass
        _WORDS_CACHE[key] = words
    return _WORDS_CACHE[key]


def _regular(path: str) -> str | None:
    """`path` made absolute and normal when it names an existing regular file outside SKIP_PARTS."""
    try:
        if not os.path.isfile(path):
            return None
    except (OSError, ValueError):
        return None
    full = os.path.normpath(os.path.abspath(path))
    return None if full.startswith(VIRTUAL) or SKIP_PARTS & set(Path(full).parts) else full


def _resolve(word: str, bases: list[str]) -> str | None:
    """The existing regular file a word names: as an absolute path, else relative to each base;
    `$VAR/x`, `$(dirname "$0")/x` (the word `/x` or `VAR/x`) are tried as `x` too."""
    if os.path.isabs(word) and (hit := _regular(word)):
        return hit
    rel = word.lstrip("/")
    tails = [rel]
    while "/" in rel:
        rel = rel.split("/", 1)[1]
        tails.append(rel)
    for tail in tails:
        if not tail or tail in (".", ".."):
            continue
        for base in bases:
            if hit := _regular(os.path.join(base, tail)):
                return hit
    return None


def named_files(commands: list[list[str]], cwd: str | os.PathLike) -> dict[str, str]:
    """Path -> content digest of every file the commands (argv lists, placeholders already
    dropped or filled) run, name or source (see the module docstring); a path under `cwd` is
    relative to it, any other absolute."""
    cwd = os.fspath(cwd)
    roots: list[str] = []      # depth 0: what argv names
    inline: list[str] = []
    programs: set[str] = set()  # run by path: a lost execute bit makes another run (see below)
    for argv in commands:
        if not argv:
            continue
        first = argv[0]
        if "/" in first and (hit := _regular(os.path.join(cwd, first))):
            roots.append(hit)
            programs.add(hit)
        script, code = _script(argv)
        if script and (hit := _regular(os.path.join(cwd, script))):
            roots.append(hit)
        if code:
            inline.append(code)
        for arg in argv[1:]:
            source = len(arg) <= 512 and os.path.splitext(arg)[1] in SOURCE_SUFFIXES
            if source and (hit := _regular(os.path.join(cwd, arg))):
                roots.append(hit)
    for code in inline:
        roots += [hit for w in _words(code) if (hit := _resolve(w, [cwd]))]
    files: dict[str, str] = {}      # absolute path -> digest
    level = list(dict.fromkeys(roots))
    for depth in range(SCAN_DEPTH + 1):
        following: list[str] = []
        for path in level:
            if path in files or len(files) >= MAX_NAMED:
                continue
            files[path] = file_digest(path)
            if path in programs and not os.access(path, os.X_OK):
                # `chmod -x ./t.sh` changes no byte, but the run no longer starts: a stored pass
                # must not answer it. An executable's digest stays as it was (stored keys hold)
                files[path] += " not-executable"
            if depth < SCAN_DEPTH:
                bases = list(dict.fromkeys([os.path.dirname(path), cwd]))
                following += [hit for w in _text(path, files[path]) if (hit := _resolve(w, bases)) and hit not in files]
        level = list(dict.fromkeys(following))
    # a file in the command's directory by its path there: `diff` runs in a scratch copy whose
    # own path changes with every command, while what it holds is the same
    top = os.path.join(os.path.normpath(os.path.abspath(cwd)), "")
    return {(p[len(top):] if p.startswith(top) else p): d for p, d in files.items()}
