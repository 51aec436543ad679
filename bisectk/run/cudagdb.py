"""Where a hung kernel's warps wait, read with cuda-gdb: each CTA's warps grouped by the place they
wait at, with the instruction and the source line.

Abstractions
------------
read   -- attach `cuda-gdb -p PID --batch` with run/cudagdb_script.py (which prints the raw text of
          `info cuda kernels/sms/warps`, and `x/i` and `info line` of every distinct PC, as one
          JSON line), detach, and parse; (groups, problem) where problem is one line or ''.
parse  -- that JSON into Groups (pure; tested on output captured on an H100):
          - a warp's place is its PC's source line (CuTe DSL kernels carry line info when
            CUTE_DSL_LINEINFO=1 was set at compile time), else the kernel symbol and offset;
          - warps spinning in one wait loop sit at different PCs of it (the sleep, the check,
            the branch back), so warps are grouped by (source line range, kind of wait), not PC;
          - the kind of wait is read from the instructions around the PC: SYNCS.PHASECHK is an
            mbarrier try_wait, BAR.SYNC/BAR.RED a named barrier, USETMAXREG a register
            reallocation (setmaxnreg), WARPSYNC a warp sync, else the instruction itself;
          - CTAs whose warps wait at the same places are one entry ("CTA (20,0,0) (+15 alike)").
Warp numbers are the CTA's own (first active thread // 32), not the SM's warp slots.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from bisectk.stuck import Group, ranges

SCRIPT = Path(__file__).with_name("cudagdb_script.py")
MARKER = "BISECTK_CUDAGDB_JSON "
MAX_SMS = 8

_WARP_ROW = re.compile(r"^\*?\s*(\d+)\s+(0x[0-9a-f]+)\s+(0x[0-9a-f]+)\s+(0x[0-9a-f]+)\s+(\d+)\s+"
                       r"\((\d+),(\d+),(\d+)\)\s+\((\d+),(\d+),(\d+)\)")
_KERNEL_ROW = re.compile(r"^\*?\s*(\d+)\s+\S+\s+(\d+)\s+(\d+)\s+\S+\s+(0x[0-9a-f]+)\s+\((\d+),(\d+),(\d+)\)\s+"
                         r"\((\d+),(\d+),(\d+)\)\s+(\S+?)(?:<<<.*)?(?:\(.*)?$")
_LINE = re.compile(r'Line (\d+) of "([^"]+)" starts at address (0x[0-9a-f]+)')
_INSN = re.compile(r"^\s*(=>)?\s*(0x[0-9a-f]+)\s*<([^>]*)>:\s*(.*)$")
_WAITS = (("SYNCS.PHASECHK", "mbarrier try_wait"), ("USETMAXREG", "setmaxnreg (register reallocation)"),
          ("WARPSYNC", "warp sync"), ("NANOSLEEP", "sleep loop"))


def short_kernel(name: str) -> str:
    """A readable kernel name: CuTe DSL's mangled '..._buildlocalsRowSumWS_object_at_...' -> 'RowSumWS'."""
    m = re.search(r"buildlocals([A-Za-z0-9]+?)_object_at", name)
    if m:
        return m.group(1)
    name = re.sub(r"^kernel_cutlass_kernel_+", "", name)
    return name if len(name) <= 48 else name[:45] + "..."


def _kernels(text: str) -> dict[int, tuple[str, tuple[int, int, int]]]:
    out = {}
    for line in text.splitlines():
        m = _KERNEL_ROW.match(line)
        if m:
            out[int(m.group(1))] = (short_kernel(m.group(11)), (int(m.group(8)), int(m.group(9)), int(m.group(10))))
    return out


def _instructions(text: str) -> list[tuple[bool, str, str]]:
    """(at the PC, address, instruction without its predicate) of an `x/Ni` listing."""
    out = []
    for line in text.splitlines():
        m = _INSN.match(line)
        if m:
            out.append((bool(m.group(1)), m.group(2), re.sub(r"^@!?U?P\w+\s+", "", m.group(4).strip())))
    return out


_BAR = re.compile(r"^BAR\.(SYNC|RED\.\w+|ARV)\S*\s+(0x[0-9a-f]+|\d+)(?:\s*,\s*(0x[0-9a-f]+|\d+))?")
_DEF = re.compile(r"^\s*(@|def\s|class\s)")


def _source(path: str, cache: dict) -> list[str]:
    if path not in cache:
        try:
            with open(cache.get("<resolve>", lambda p: p)(path), encoding="utf-8", errors="replace") as f:
                cache[path] = f.read().splitlines()
        except OSError:
            cache[path] = []
    return cache[path]


def _barrier_lines(lines: list[str], bar_id: int) -> list[int]:
    """Source lines that call a named barrier with this literal id (`barrier(barrier_id=1, ...)`)."""
    rx = re.compile(rf"barrier\w*\(\s*(?:barrier_id\s*=\s*)?{bar_id}\b")
    return [i + 1 for i, text in enumerate(lines) if rx.search(text)]


def classify(pc_info: dict, sources: dict | None = None) -> tuple[str, str, str]:
    """(place, instruction, kind of wait) of one PC from its `x/i`, the lines before it and `info line`.

    A warp blocked on a named barrier sits past its BAR.SYNC (a deferred-blocking barrier lets it
    issue a few more instructions), so the instructions just before the PC count; an mbarrier wait is a tight loop (sleep, check, branch back), so any
    SYNCS.PHASECHK around the PC does. A named barrier's id and thread count come from its operands;
    where the line info points at the kernel's definition (the DSL gives some instructions none of
    their own), the one source line calling a barrier with that literal id is named instead."""
    sources = {} if sources is None else sources
    line = _LINE.search(pc_info.get("line", ""))
    after = _instructions(pc_info.get("x", ""))
    before = _instructions(pc_info.get("before", ""))
    here = after[0][2] if after else ""
    place = f"{os.path.basename(line.group(2))}:{line.group(1)}" if line else ""
    if not place and after:
        m = _INSN.match(pc_info.get("x", "").splitlines()[0]) if pc_info.get("x") else None
        sym = m.group(3) if m else ""
        place = f"{short_kernel(sym.split('+')[0])}+{sym.split('+')[1]}" if "+" in sym else (sym or "?")
    # BAR.SYNC.DEFER_BLOCKING lets a warp issue a few independent instructions before it blocks
    near = [here] + [b[2] for b in reversed(before)]
    for insn in near:
        bar = _BAR.match(insn)
        if bar:
            bar_id = int(bar.group(2), 0)
            count = f", {int(bar.group(3), 0)} threads" if bar.group(3) else ""
            kind = "named barrier arrive" if bar.group(1) == "ARV" else "named barrier"
            if line:
                text = _source(line.group(2), sources)
                n = int(line.group(1))
                calls = _barrier_lines(text, bar_id) if text else []
                if len(calls) == 1 and (0 < n <= len(text) and _DEF.match(text[n - 1]) or not text):
                    place = f"{os.path.basename(line.group(2))}:{calls[0]}"
            return place or "?", insn.split()[0], f"{kind} {bar_id}{count}"
    window = before + after
    for needle, kind in _WAITS:
        for insn in [here] + [w[2] for w in window]:
            if insn.startswith(needle) or f" {needle}" in insn:
                return place or "?", insn.split()[0] if insn else "", kind
    return place or "?", here.split()[0] if here else "", "other"


MAX_CTA_KINDS = 3   # more distinct CTA pictures than this: one picture per kernel, warps pooled


def parse(data: dict, resolve=None) -> tuple[list[Group], str]:
    """Groups from the script's JSON, and a note ('' or one line: e.g. only some SMs were read).
    `resolve` maps a kernel source path as cuda-gdb names it to where it can be read (tests)."""
    kernels = _kernels(data.get("kernels", ""))
    sources: dict = {"<resolve>": resolve} if resolve else {}
    pcs = {pc: classify(info, sources) for pc, info in (data.get("pcs") or {}).items()}
    insn: dict[tuple[str, str], str] = {}
    ctas: dict[tuple[int, tuple[int, int, int]], dict[tuple[str, str], set[int]]] = {}
    for text in (data.get("warps") or {}).values():
        for line in text.splitlines():
            m = _WARP_ROW.match(line)
            if not m:
                continue
            pc, kernel = m.group(4), int(m.group(5))
            block = (int(m.group(6)), int(m.group(7)), int(m.group(8)))
            dims = kernels.get(kernel, ("", (0, 1, 1)))[1]
            tid = int(m.group(9)) + int(m.group(10)) * max(dims[0], 1) + int(m.group(11)) * max(dims[0] * dims[1], 1)
            place, opcode, wait = pcs.get(pc) or (pc, "", "other")
            # one wait loop is several PCs (sleep, check, branch back): one place, one canonical opcode
            insn.setdefault((place, wait), opcode.replace(".TRYWAIT", ""))
            ctas.setdefault((kernel, block), {}).setdefault((place, wait), set()).add(tid // 32)
    groups: list[Group] = []
    for kernel in sorted({k for k, _ in ctas}):
        blocks = {b: places for (k, b), places in ctas.items() if k == kernel}
        name = kernels.get(kernel, (f"kernel {kernel}", None))[0]
        alike: dict[tuple, list[tuple[int, int, int]]] = {}
        for block, places in blocks.items():
            alike.setdefault(tuple(sorted((w, tuple(sorted(ws))) for w, ws in places.items())), []).append(block)
        if len(alike) <= MAX_CTA_KINDS:
            pictures = [(f"kernel {name}, CTA {_xyz(min(bs))}" + (f" (+{len(bs) - 1} alike)" if len(bs) > 1 else ""),
                         dict(sig)) for sig, bs in sorted(alike.items(), key=lambda kv: min(kv[1]))]
        else:   # CTAs caught at different moments: pool each place's warps over the kernel's CTAs
            pooled: dict[tuple[str, str], set[int]] = {}
            for places in blocks.values():
                for w, ws in places.items():
                    pooled.setdefault(w, set()).update(ws)
            pictures = [(f"kernel {name}, {len(blocks)} CTAs pooled", {w: tuple(sorted(ws)) for w, ws in pooled.items()})]
        for scope, places in pictures:
            for (place, wait), warps in sorted(places.items(), key=lambda kv: min(kv[1])):
                groups.append(Group(role=f"warp{'s' if len(warps) > 1 else ''} {ranges(list(warps))} "
                                         f"(threads {_thread_ranges(warps)})",
                                    count=len(warps), place=place, instruction=insn.get((place, wait), ""),
                                    wait=wait, scope=scope, device=True))
    seen_sms = len(data.get("warps") or {})
    all_sms = len(re.findall(r"^\s*\*?\s*\d+\s+0x[0-9a-f]+\s*$", data.get("sms", ""), re.M))
    note = f"cuda-gdb: warps of {seen_sms} of {all_sms} SMs read" if all_sms > seen_sms else ""
    return groups, note


def _xyz(b: tuple[int, int, int]) -> str:
    return f"({b[0]},{b[1]},{b[2]})"


def _thread_ranges(warps) -> str:
    out = []
    for part in ranges(list(warps)).split(", "):
        a, _, b = part.partition("-")
        out.append(f"{int(a) * 32}-{int(b or a) * 32 + 31}")
    return ", ".join(out)


def read(pid: int, *, deadline_s: float, tool: str | None = None) -> tuple[list[Group], str]:
    """Attach cuda-gdb to `pid` for at most `deadline_s` seconds; (groups, problem)."""
    from bisectk.run.readers import call, which
    tool = tool or which("cuda-gdb")
    if tool is None:
        return [], "GPU warps not read: cuda-gdb is not installed"
    if deadline_s < 1.0:
        return [], "GPU warps not read: no time left in the snapshot's budget"
    argv = [tool, "-p", str(pid), "--batch", "-nx", "-ex", "set pagination off", "-ex", "set width 0",
            "-x", str(SCRIPT)]
    env = {**os.environ, "BISECTK_CUDAGDB_MAX_SMS": str(MAX_SMS)}
    out, problem = call(argv, deadline_s, env)
    line = next((ln for ln in out.splitlines() if ln.startswith(MARKER)), None)
    if line is None:
        why = problem or "it printed no warp table"
        return [], f"GPU warps not read: {why if why.startswith('cuda-gdb') else 'cuda-gdb: ' + why}"
    try:
        groups, note = parse(json.loads(line[len(MARKER):]))
    except (ValueError, TypeError):
        return [], "GPU warps not read: cuda-gdb's output could not be read"
    if not groups:
        return [], "GPU warps not read: cuda-gdb showed no warp of a running kernel"
    return groups, note
