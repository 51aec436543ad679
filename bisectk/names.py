"""A name (a file's, a hunk id beginning with one, a factor's) as text on one line: git's C-quoting.

c_quoted -- unchanged unless the name holds a control character, `"` or a backslash; then in
            double quotes, with \\n, \\t, \\", \\\\ and octal escapes, as git writes a path it must
            quote (core.quotePath off). A newline in a name would otherwise split a line of a
            report in two. The engines word labels with it (a hang's "the culprit hunks applied to
            GOOD (...)"), the reports their lists of ids; JSON keeps names raw.
ids_text -- ids (hunk ids, places) joined for a line of text, each c_quoted, the first `limit`
            and how many more; "none" for none.
counted  -- a count and its noun, singular for one: '1 hunk', '2 hunks', '0 runs'.
shell_join -- a command to paste into a POSIX shell (sh, dash, bash, zsh), on one line of visible
            text: shlex.join, but a word holding what a terminal would not show as itself (a
            control character, a tab, an undecodable byte of a latin-1 file name) is written
            "$(printf '...')" with those bytes as octal escapes. shlex alone put the raw character
            in quotes, which the terminal then showed escaped ('sp\\xe9c.toml'): pasted, that named
            another file.
"""

from __future__ import annotations

import re

_C_ESCAPES = {"\a": "\\a", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\v": "\\v", "\f": "\\f", "\r": "\\r",
              '"': '\\"', "\\": "\\\\"}
_C_QUOTED = re.compile('["\\\\\x00-\x1f\x7f]')


def c_quoted(name: str) -> str:
    """See the module docstring."""
    if not isinstance(name, str) or not _C_QUOTED.search(name):
        return name
    return '"' + _C_QUOTED.sub(lambda m: _C_ESCAPES.get(m.group(0), f"\\{ord(m.group(0)):03o}"), name) + '"'


def ids_text(ids, limit: int = 8) -> str:
    """See the module docstring."""
    ids = [c_quoted(i) for i in ids]
    text = ", ".join(ids[:limit])
    return text + (f" (+{len(ids) - limit} more)" if len(ids) > limit else "") if ids else "none"


def counted(n: int, word: str) -> str:
    """'1 hunk', '2 hunks', '0 runs'; `word` is the singular ('candidate commit')."""
    return f"{n} {word}{'' if n == 1 else 's'}"


# what a terminal shows as something else (report/safe.py terminal_text's set), and tab and
# newline, which a printed line turns into spaces or breaks
_UNSHOWN = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def _printf_word(word: str) -> str:
    out = []
    for c in word:
        if c == "\\":
            out.append("\\\\")
        elif c == "%":
            out.append("%%")
        elif c == "'" or _UNSHOWN.match(c):
            data = c.encode("utf-8", "surrogateescape" if 0xDC80 <= ord(c) <= 0xDCFF else "surrogatepass")
            out.append("".join(f"\\{b:03o}" for b in data))
        else:
            out.append(c)
    text = "".join(out)
    text = "\\055" + text[1:] if text.startswith("-") else text     # no option of printf's
    return "\"$(printf '" + text + "')\""


def shell_join(argv) -> str:
    """See the module docstring. A word that ends in a newline keeps shlex's quoting (a command
    substitution drops trailing newlines): still the word, over two lines."""
    import shlex
    return " ".join(_printf_word(w) if _UNSHOWN.search(w) and not w.endswith("\n") else shlex.quote(w)
                    for w in map(str, argv))
