"""Why a command cannot be started, in words: before anything starts (`invalid_command`: an empty
command, a NUL byte, a bad environment name) and after exec refused it (`why_not_started`: a
missing program or interpreter, a script without its execute bit, an argument or environment
value over Linux's limit on one string). `shell_script` and `exec_paths`: a script without a
shebang runs with sh, as a shell would; the supervisor tries each PATH entry in turn.
run/process.py asks these; nothing here starts a process.
"""

from __future__ import annotations

import errno
import os


def invalid_command(argv, cwd=None, env: dict | None = None) -> str | None:
    """Why argv/cwd/env cannot be given to the kernel (an empty command, a NUL byte, a bad
    environment variable name), or None. Checked before anything starts."""
    if not argv or not isinstance(argv, (list, tuple)):
        return "empty command"
    for i, arg in enumerate(argv):
        if not isinstance(arg, str):
            return f"argument {i} is not a string ({type(arg).__name__})"
        if "\0" in arg:
            return f"argument {i} ({_short(arg)}) contains a NUL byte"
    if cwd is not None and "\0" in os.fspath(cwd):
        return f"working directory {_short(os.fspath(cwd))} contains a NUL byte"
    env = env or {}
    keys, values = list(env), list(env.values())
    if (set(map(type, keys)) <= {str} and set(map(type, values)) <= {str} and "" not in env
            and "=" not in "".join(keys) and "\0" not in "".join(keys) and "\0" not in "".join(values)):
        return None     # the common case, checked in bulk: thousands of variables cost no loop below
    for k, v in env.items():
        if not isinstance(k, str) or not k or "=" in k or "\0" in k:
            return f"environment variable name {_short(str(k))} is not valid (empty, or contains '=' or NUL)"
        if not isinstance(v, str) or "\0" in v:
            return f"environment variable {_short(k)}: its value is not a string without NUL bytes"
    return None


def _short(text: str, n: int = 60) -> str:
    text = repr(text)
    return text if len(text) <= n else text[:n] + "..."


def why_not_started(exc: BaseException, argv0: str = "", cwd: str | os.PathLike | None = None,
              argv: list[str] | None = None, env: dict[str, str] | None = None) -> str:
    """An OSError's or ValueError's reason in one line (a ValueError has no strerror). A program
    named without a slash that no PATH directory has is said so: the error's own file name is
    only the last directory execvpe tried. A script that is there, but whose `#!` interpreter is
    not, is said so too (the kernel's ENOENT names the script): most often a first line that ends
    in a carriage return, a script saved with Windows line endings. A "Permission denied" is
    said as what it is: a directory, or a file without its execute bit. "Argument list too long"
    names the argument or environment variable over Linux's limit on one string (MAX_ARG_STRLEN),
    most often a variable, which the kernel's words do not suggest. A working directory that is
    missing, or a file, is named as that."""
    filename = getattr(exc, "filename", None)
    if filename is not None and cwd is not None and os.fspath(filename) == os.fspath(cwd):
        # the directory the run starts in, not the program (a spec's `cwd` with a typo): the
        # kernel's words "No such file or directory" read as a missing interpreter
        what = "does not exist" if isinstance(exc, FileNotFoundError) else "is not a directory"
        return f"its working directory {os.fspath(cwd)} {what}"
    if (isinstance(exc, FileNotFoundError) and argv0 and not os.path.dirname(argv0)
            and (filename is None or os.path.basename(os.fspath(filename)) == argv0)):
        return "not found on the run's PATH"
    if isinstance(exc, FileNotFoundError) and argv0 and os.path.dirname(argv0):
        interpreter = _shebang(os.path.join(os.fspath(cwd or "."), argv0))
        if interpreter is not None:
            if interpreter.endswith("\r"):
                script = os.path.join(os.fspath(cwd or "."), argv0)
                fix = (f"git's checkout wrote them if core.autocrlf=true or an eol=crlf attribute asks (`git config "
                       f"core.autocrlf input`, or a .gitattributes line `*.sh text eol=lf`), else convert the script "
                       f"(dos2unix {argv0})" if _in_git_tree(script) else f"convert the script (dos2unix {argv0})")
                return (f"its first line, #!{interpreter[:-1]}, ends in a carriage return (Windows line endings): "
                        f"no interpreter '{interpreter[:-1]}\\r' exists; {fix}")
            return f"its interpreter (#!{interpreter}) does not exist"
    if isinstance(exc, PermissionError) and argv0 and os.path.dirname(argv0):
        # the kernel's EACCES says neither which: a directory, or a file without its execute bit
        where = os.path.join(os.fspath(cwd or "."), argv0)
        if os.path.isdir(where):
            return "it is a directory, not a program"
        if os.path.isfile(where) and not os.access(where, os.X_OK):
            return f"it is not executable (chmod +x {argv0})"
    if isinstance(exc, OSError) and exc.errno == errno.E2BIG and (long := _too_long(argv or (), env or {})):
        return (f"Argument list too long: {long}; Linux refuses one argument or NAME=VALUE "
                f"over {MAX_ARG_STRLEN} bytes (MAX_ARG_STRLEN)")
    what = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
    return f"{what}: {filename}" if filename else what


def _in_git_tree(path: str) -> bool:
    """Whether `path` lies in a git work tree (a `.git` beside it or above: a checkout, or one of
    bisectk's worktrees), where git's checkout may have written its line endings."""
    here = os.path.dirname(os.path.abspath(path))
    while True:
        if os.path.lexists(os.path.join(here, ".git")):
            return True
        up = os.path.dirname(here)
        if up == here:
            return False
        here = up


MAX_ARG_STRLEN = 32 * 4096      # Linux: one argument, or one NAME=VALUE of the environment


def _too_long(argv: list[str], env: dict[str, str]) -> str | None:
    """The first argument or environment variable the kernel refuses for its length, in words."""
    for i, arg in enumerate(argv):
        if len(os.fsencode(arg)) + 1 > MAX_ARG_STRLEN:
            return f"argument {i} holds {len(os.fsencode(arg))} bytes"
    for k, v in env.items():
        if len(os.fsencode(k)) + len(os.fsencode(v)) + 2 > MAX_ARG_STRLEN:
            return f"the environment variable {_short(k)} holds {len(os.fsencode(v))} bytes"
    return None


def _shebang(path: str) -> str | None:
    """The interpreter a script's `#!` line names (its first word, a trailing CR kept), or None
    when `path` is no readable file or has no `#!` line."""
    try:
        with open(path, "rb") as f:
            first = f.readline(4096)
    except OSError:
        return None
    if not first.startswith(b"#!"):
        return None
    words = first[2:].rstrip(b"\n").split(b" ")
    words = [w for w in words if w] or [b""]
    return words[0].decode("utf-8", "replace")


def shell_script(argv0: str, cwd) -> bool:
    """Whether `argv0` (named with a slash) is a file the kernel would not execute, but a shell
    would run with sh: readable, not an ELF binary, no `#!`, no NUL byte in its first 1 KB."""
    if not os.path.dirname(argv0):
        return False
    try:
        with open(os.path.join(os.fspath(cwd or "."), argv0), "rb") as f:
            head = f.read(1024)
    except OSError:
        return False
    return not head.startswith((b"\x7fELF", b"#!")) and b"\0" not in head


def exec_paths(argv0: str, env: dict[str, str]) -> list[str]:
    """The candidates execvpe would try, searching the subject's own PATH (as Popen does)."""
    if os.path.dirname(argv0):
        return [argv0]
    return [os.path.join(d, argv0) for d in os.get_exec_path(env)]
