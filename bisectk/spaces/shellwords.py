"""A command line as its words: split with shell rules, refused where it holds shell syntax, and
which of its words runs.

`--run` and `--build` run without a shell, as `git bisect run`'s words do: the line is split once
with shell rules (shlex), and the words go to the program as they are. What only a shell reads
(`&&`, `|`, a redirection, `$X`, `~`, a leading assignment) would reach the program as an argument
instead, so the line is refused with a one-line error that says what to write (`sh -c '...'`, a
script). Text only: nothing here reads a file or runs git (spaces/command.py resolves the words).

Abstractions
------------
split_command      -- a quoted command line split into argv with shell rules, or a one-line error
                      when it holds shell syntax that the split would turn into arguments.
shell_syntax       -- the first shell operator, expansion or assignment outside quotes, or None.
runs_shell         -- whether argv hands a script to a shell (`sh -c ...`): its `$X` is the shell's.
script_index       -- the index of the file an interpreter runs (`python t.py`, `bash -x t.sh`).
shell_script_index -- the index of the script in `sh -c SCRIPT`.
pytest_words       -- pytest's arguments in a command that runs it (`python -m pytest -q t.py`).
"""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path

from bisectk.errors import BisectkError


# programs whose first operand is the file they run (`python t.py`, `bash -x t.sh`)
_INTERPRETER = re.compile(r"(?:python[\d.]*|pypy[\d.]*|sh|bash|dash|zsh|ksh|perl|ruby|node|Rscript)")


def script_index(argv: list[str]) -> int | None:
    """The index of the file an interpreter command runs (its first operand), or None (not an
    interpreter, `python -m mod`, `sh -c '...'`, no operand)."""
    if not argv or not _INTERPRETER.fullmatch(os.path.basename(argv[0])):
        return None
    for k, word in enumerate(argv[1:], 1):
        if word in ("-m", "-c", "-e", "--eval", "-"):
            return None
        if not word.startswith("-"):
            return k
    return None


_OPERATORS = ("&&", "||", ";;", ">>", "<<", "2>", "$(", "|", "&", ";", ">", "<", "`")


_SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "busybox"})


def runs_shell(argv: list[str]) -> bool:
    """Whether argv hands a script to a shell (`sh -c ...`, `bash -euc ...`, `env X=1 bash -lc ...`):
    then a substitution inside double quotes is the shell's to expand, as the user meant."""
    for i, word in enumerate(argv):
        if Path(word).name in _SHELLS:
            return any(w == "-c" or (re.fullmatch(r"-[a-z]+", w) and "c" in w) for w in argv[i + 1:i + 4])
    return False


_EXPANSION = re.compile(r"\$(\{[^}]*\}?|[A-Za-z_][A-Za-z0-9_]*|[0-9@*#?$!])")   # $HOME, ${X}, $1, $@
_ASSIGNMENT_FIRST = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*)=")                    # `CUDA_X=1 ./t.sh`


def shell_syntax(text: str, *, shell_script: bool = False) -> str | None:
    """The first shell operator outside quotes in `text` (`&&`, `|`, `;`, a redirection, a command
    substitution), or None. shlex.split reads such an operator as one more argument: `--run 'make
    && ./t.sh'` would run `make` with the arguments `&&` and `./t.sh`, and the answer would rest
    on `make` alone. A substitution inside double quotes counts too (nothing would expand it),
    unless `shell_script`: the quoted text goes to `sh -c`, which does. So does what only a shell
    expands or drops: a parameter (`$TESTS/t.sh`, `"${X}"`), a `~` starting a
    word, a `#` starting a comment, and an assignment before the program (`CUDA_X=1 ./t.sh`):
    each would reach the program as typed (`cannot start '$TESTS/t.sh'` at the good endpoint, or a
    variable never set), never as the shell the user wrote them for reads them."""
    first = _ASSIGNMENT_FIRST.match(text)
    if first:
        return first.group(1) + "="
    quote, i = "", 0
    while i < len(text):
        c = text[i]
        if quote:
            if c == quote:
                quote = ""
            elif quote == '"' and not shell_script and (c == "`" or text.startswith("$(", i)):
                return c if c == "`" else "$("      # a substitution runs inside double quotes too
            elif quote == '"' and not shell_script and c == "$" and _EXPANSION.match(text, i):
                return _EXPANSION.match(text, i).group(0)
            elif c == "\\" and quote == '"':
                i += 1
        elif c in "'\"":
            quote = c
        elif c == "\\":
            i += 1
        elif c in "~#" and (i == 0 or text[i - 1].isspace()):
            return c
        elif c == "$" and _EXPANSION.match(text, i):
            return _EXPANSION.match(text, i).group(0)
        else:
            op = next((o for o in _OPERATORS if text.startswith(o, i)), None)
            if op == "2>" and i > 0 and not text[i - 1].isspace():
                op = None               # "a2>b" is one word with a redirection in it; the ">" finds it
            if op is not None:
                return op
        i += 1
    return None


def split_command(text: str, option: str) -> list[str]:
    try:
        argv = shlex.split(text)
    except ValueError as exc:
        raise BisectkError(f"{option} {text!r}: {exc}") from None
    if not argv:
        raise BisectkError(f"{option}: empty command")
    op = shell_syntax(text, shell_script=runs_shell(argv))
    if op is not None:
        how = (f"""{option} "sh -c '{text}'" """.rstrip() if not any(q in text for q in "'\"\\$`")
               else f"{option} \"sh -c '...'\"")
        raise BisectkError(f"{option} {text!r}: {op!r} is shell syntax, but the command runs without a shell (as "
                           f"git bisect run's does): write {how}, or put the commands in a script")
    return argv


def shell_script_index(argv: list[str]) -> int | None:
    """The index of the script in `sh -c SCRIPT` (`bash -euc SCRIPT`, `env A=1 bash -lc SCRIPT`):
    the first operand after the shell's options; None when argv runs no shell script."""
    if not runs_shell(argv):
        return None
    shell = next(i for i, w in enumerate(argv) if Path(w).name in _SHELLS)
    return next((j for j in range(shell + 1, len(argv)) if not argv[j].startswith("-")), None)


def pytest_words(argv: list[str]) -> list[str]:
    """pytest's arguments in a --run command that runs it (`pytest tests/t.py`, `python -m pytest
    -q tests/t.py`): its test files are read as --pytest's are (their conftest.py files go too)."""
    if argv and os.path.basename(argv[0]) in ("pytest", "py.test"):
        return argv[1:]
    if argv and _INTERPRETER.fullmatch(os.path.basename(argv[0])) and argv[1:3] == ["-m", "pytest"]:
        return argv[3:]
    return []
