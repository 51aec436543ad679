"""PTX evidence: a synchronisation/data-movement signature of a kernel, and its diff between configs.

Everything here except `ptx_of_script` is a pure function over PTX text, so it runs on any machine.
The counts are static: occurrences in the PTX text (an instruction inside a loop counts once; the
``mbarrier.try_wait`` spin loops that the CuTe DSL emits as inline asm count once per call site).

    sig = signature(ptx_text)               # -> Signature
    rows = diff(sig_good, sig_bad)          # -> [(key, good, bad)] for the keys that differ
    print(format_diff(rows, "good", "bad")) # a markdown table
    text, result = ptx_of_script("kernels/cutedsl/ws_pipeline.py", ["--stages", "1"])

Signature keys (a flat dict, see `Signature.flat`):
  mbarrier.init, mbarrier.arrive (every arrive flavour, expect_tx ones included), expect_tx,
  mbarrier.try_wait, bar.sync[id,threads] / bar.arrive[id,threads] (one key per barrier id and
  thread count: `all` when the count is omitted, `%r..` when it is a register), cp.async.bulk.tensor
  (and its .g2s / .s2g split), wgmma.mma_async (and per shape, wgmma.mma_async.m64n128k16),
  wgmma (all wgmma.* instructions), wgmma.fence, wgmma.commit_group, wgmma.wait_group[depth],
  setmaxnreg (with the register counts), shared.static_bytes (from `.shared` declarations), shared.dynamic
  (an `.extern .shared` array is declared: its size is set at launch, see `smem_bytes` of the
  subject's result line), reqntid / maxntid (threads per CTA), entries (number of kernels).
"""

from __future__ import annotations

import json
import os
import re
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from bisectk.errors import install_hint
from bisectk.run.process import run_process

__all__ = ["Signature", "signature", "diff", "format_diff", "ptx_of_script", "PtxError"]


class PtxError(RuntimeError):
    """Obtaining PTX failed (the compile-only run exited non-zero or wrote no PTX)."""


# --- patterns (comments are stripped first) ---------------------------------------------------
_COMMENT = re.compile(r"//[^\n]*")
_MBAR_INIT = re.compile(r"\bmbarrier\.init\b")
_MBAR_ARRIVE = re.compile(r"\bmbarrier\.arrive(?:_drop)?\b")
_EXPECT_TX = re.compile(r"\bexpect_tx\b")
_TRY_WAIT = re.compile(r"\bmbarrier\.try_wait\b")
_TEST_WAIT = re.compile(r"\bmbarrier\.test_wait\b")
# bar.sync 1, 128;  bar.arrive 2, 160;  barrier.sync.aligned 0;  barrier.cta.arrive 3, %r5;
_BAR = re.compile(
    r"\b(?:bar|barrier)(?:\.cta)?\.(sync|arrive|red)(?:\.aligned)?(?:\.[a-z0-9]+)*\s+"
    r"([^,;\s]+)\s*(?:,\s*([^,;\s]+))?[^;]*;")
_BAR_WARP = re.compile(r"\bbar\.warp\.sync\b")
_BULK_TENSOR = re.compile(r"\bcp\.async\.bulk\.tensor\.[^\s]*")
_WGMMA_MMA = re.compile(r"\bwgmma\.mma_async\b")
_WGMMA_ANY = re.compile(r"\bwgmma\.[a-z_]+")
_WGMMA_FENCE = re.compile(r"\bwgmma\.fence\b")
_WGMMA_COMMIT = re.compile(r"\bwgmma\.commit_group\b")
_WGMMA_WAIT = re.compile(r"\bwgmma\.wait_group(?:\.[a-z]+)*\s+(\d+)")
_WGMMA_SHAPE = re.compile(r"\bwgmma\.mma_async(?:\.[a-z]+)*\.(m\d+n\d+k\d+)")
_SETMAXNREG = re.compile(r"\bsetmaxnreg\.(inc|dec)\.sync\.aligned\.u32\s+(\d+)")
_SHARED_DECL = re.compile(
    r"^\s*(\.extern\s+)?\.shared\s+(?:\.align\s+(\d+)\s+)?\.(b8|b16|b32|b64|u8|u16|u32|u64|s8|s16|"
    r"s32|s64|f16|f32|f64)\s+([A-Za-z_$%][\w$]*)\s*((?:\[\d*\])*)", re.M)
_ENTRY = re.compile(r"\.entry\s+([\w$]+)")
_NTID = re.compile(r"\.(reqntid|maxntid)\s+(\d+)(?:\s*,\s*(\d+))?(?:\s*,\s*(\d+))?")
_WIDTH = {"8": 1, "16": 2, "32": 4, "64": 8}


@dataclass
class Signature:
    mbarrier_init: int = 0
    mbarrier_init_counts: Counter = field(default_factory=Counter)  # arrive count -> inits
    expect_tx_bytes: Counter = field(default_factory=Counter)       # byte count -> occurrences
    mbarrier_arrive: int = 0
    expect_tx: int = 0
    try_wait: int = 0
    test_wait: int = 0
    bar_sync: Counter = field(default_factory=Counter)      # (id, threads) -> occurrences
    bar_arrive: Counter = field(default_factory=Counter)
    bar_red: Counter = field(default_factory=Counter)
    bar_warp_sync: int = 0
    bulk_tensor: int = 0
    bulk_tensor_g2s: int = 0
    bulk_tensor_s2g: int = 0
    wgmma_mma: int = 0
    wgmma_any: int = 0
    wgmma_fence: int = 0
    wgmma_commit: int = 0
    wgmma_wait: Counter = field(default_factory=Counter)    # wait_group depth -> occurrences
    wgmma_shapes: Counter = field(default_factory=Counter)  # "m64n128k16" -> mma_async count
    setmaxnreg: Counter = field(default_factory=Counter)    # ("inc"/"dec", regs) -> occurrences
    shared_static_bytes: int = 0
    shared_dynamic: bool = False
    entries: list = field(default_factory=list)
    threads: int | None = None                              # reqntid (or maxntid) product

    def flat(self) -> dict[str, int | bool | None]:
        """One flat mapping key -> value; the unit `diff` compares."""
        d: dict[str, int | bool | None] = {
            "mbarrier.init": self.mbarrier_init,
            "mbarrier.arrive": self.mbarrier_arrive,
            "expect_tx": self.expect_tx,
            "mbarrier.try_wait": self.try_wait,
            "mbarrier.test_wait": self.test_wait,
            "cp.async.bulk.tensor": self.bulk_tensor,
            "cp.async.bulk.tensor.g2s": self.bulk_tensor_g2s,
            "cp.async.bulk.tensor.s2g": self.bulk_tensor_s2g,
            "wgmma.mma_async": self.wgmma_mma,
            "wgmma": self.wgmma_any,
            "wgmma.fence": self.wgmma_fence,
            "wgmma.commit_group": self.wgmma_commit,
            "setmaxnreg": sum(self.setmaxnreg.values()),
            "bar.warp.sync": self.bar_warp_sync,
            "shared.static_bytes": self.shared_static_bytes,
            "shared.dynamic": self.shared_dynamic,
            "threads": self.threads,
            "entries": len(self.entries),
        }
        for name, counter in (("bar.sync", self.bar_sync), ("bar.arrive", self.bar_arrive),
                              ("bar.red", self.bar_red)):
            d[name] = sum(counter.values())
            for (bid, n), c in sorted(counter.items(), key=lambda kv: (str(kv[0][0]), str(kv[0][1]))):
                d[f"{name}[id={bid},threads={n}]"] = c
        for n, c in sorted(self.mbarrier_init_counts.items(), key=lambda kv: str(kv[0])):
            d[f"mbarrier.init[count={n}]"] = c
        for n, c in sorted(self.expect_tx_bytes.items(), key=lambda kv: str(kv[0])):
            d[f"expect_tx[bytes={n}]"] = c
        for (kind, regs), c in sorted(self.setmaxnreg.items()):
            d[f"setmaxnreg.{kind}[{regs}]"] = c
        for depth, c in sorted(self.wgmma_wait.items()):
            d[f"wgmma.wait_group[{depth}]"] = c
        for shape, c in sorted(self.wgmma_shapes.items()):
            d[f"wgmma.mma_async.{shape}"] = c
        return d

    def to_json(self) -> str:
        return json.dumps(self.flat(), sort_keys=True)


def _strip(ptx: str) -> str:
    return _COMMENT.sub("", ptx)


def _shared_bytes(text: str) -> tuple[int, bool]:
    static, dynamic = 0, False
    for m in _SHARED_DECL.finditer(text):
        extern, _align, ty, _name, dims = m.groups()
        if extern:
            dynamic = True
            continue
        n = 1
        for dim in re.findall(r"\[(\d*)\]", dims):
            if dim == "":
                dynamic = True
                n = 0
                break
            n *= int(dim)
        static += n * _WIDTH[re.sub(r"\D", "", ty)]
    return static, dynamic


_MOV_IMM = re.compile(r"^\s*mov\.(?:b32|u32|s32|b64|u64|s64)\s+(%\w+)\s*,\s*(-?\d+)\s*;")
_DEST = re.compile(r"^\s*(?:@!?%\w+\s+)?[a-z][\w.:]*\s+(%\w+)\s*[,;|]")
_INIT_OPS = re.compile(r"\bmbarrier\.init(?:\.[\w:]+)*\s+\[[^\]]*\]\s*,\s*([^;\s]+)\s*;")
_EXPECT_OPS = re.compile(r"\bexpect_tx(?:\.[\w:]+)*\s+(?:[^,;]+,\s*)?\[[^\]]*\]\s*,\s*([^;\s,]+)")


def _resolve(operand: str, consts: dict[str, int]):
    """An immediate operand, or a register last set by `mov <reg>, <imm>` (else the register)."""
    if re.fullmatch(r"-?\d+", operand):
        return int(operand)
    return consts.get(operand, operand)


def _operand_values(text: str, s: "Signature") -> None:
    """Resolve the arrive counts of mbarrier.init, expect_tx byte counts and named-barrier thread
    counts that the compiler put in registers (straight-line `mov %r, imm` before the use)."""
    consts: dict[str, int] = {}
    for line in text.splitlines():
        if _ENTRY.search(line) or line.strip().startswith(".func"):
            consts.clear()
        m = _MOV_IMM.match(line)
        if m:
            consts[m.group(1)] = int(m.group(2))
            continue
        mi = _INIT_OPS.search(line)
        if mi:
            s.mbarrier_init_counts[_resolve(mi.group(1), consts)] += 1
        me = _EXPECT_OPS.search(line)
        if me:
            s.expect_tx_bytes[_resolve(me.group(1), consts)] += 1
        mb = _BAR.search(line)
        if mb:
            kind, bid, count = mb.groups()
            key = (_resolve(bid, consts), _resolve(count, consts) if count is not None else "all")
            {"sync": s.bar_sync, "arrive": s.bar_arrive, "red": s.bar_red}[kind][key] += 1
        md = _DEST.match(line)
        if md:
            consts.pop(md.group(1), None)


def signature(ptx: str) -> Signature:
    """Count the synchronisation and data-movement instructions of a PTX module."""
    text = _strip(ptx)
    s = Signature()
    s.mbarrier_init = len(_MBAR_INIT.findall(text))
    s.mbarrier_arrive = len(_MBAR_ARRIVE.findall(text))
    s.expect_tx = len(_EXPECT_TX.findall(text))
    s.try_wait = len(_TRY_WAIT.findall(text))
    s.test_wait = len(_TEST_WAIT.findall(text))
    s.bar_warp_sync = len(_BAR_WARP.findall(text))
    _operand_values(text, s)
    for m in _BULK_TENSOR.finditer(text):
        s.bulk_tensor += 1
        op = m.group(0)
        if ".shared::cluster.global" in op or ".shared::cta.global" in op:
            s.bulk_tensor_g2s += 1
        elif ".global.shared::" in op:
            s.bulk_tensor_s2g += 1
    s.wgmma_mma = len(_WGMMA_MMA.findall(text))
    s.wgmma_any = len(_WGMMA_ANY.findall(text))
    s.wgmma_fence = len(_WGMMA_FENCE.findall(text))
    s.wgmma_commit = len(_WGMMA_COMMIT.findall(text))
    for m in _WGMMA_WAIT.finditer(text):
        s.wgmma_wait[int(m.group(1))] += 1
    for m in _WGMMA_SHAPE.finditer(text):
        s.wgmma_shapes[m.group(1)] += 1
    for m in _SETMAXNREG.finditer(text):
        s.setmaxnreg[(m.group(1), int(m.group(2)))] += 1
    s.shared_static_bytes, s.shared_dynamic = _shared_bytes(text)
    s.entries = _ENTRY.findall(text)
    ntid = _NTID.search(text)
    if ntid:
        n = 1
        for g in ntid.groups()[1:]:
            if g:
                n *= int(g)
        s.threads = n
    return s


def diff(a: Signature | dict, b: Signature | dict) -> list[tuple[str, object, object]]:
    """Rows (key, a, b) for every signature key whose value differs; a missing key reads as 0."""
    fa = a.flat() if isinstance(a, Signature) else dict(a)
    fb = b.flat() if isinstance(b, Signature) else dict(b)
    rows = []
    for key in sorted(set(fa) | set(fb), key=_key_order):
        va, vb = fa.get(key, 0), fb.get(key, 0)
        if va != vb:
            rows.append((key, va, vb))
    return rows


def _key_order(key: str):
    base = key.split("[", 1)[0]
    order = ["mbarrier.init", "mbarrier.arrive", "expect_tx", "mbarrier.try_wait",
             "mbarrier.test_wait", "bar.sync", "bar.arrive", "bar.red", "bar.warp.sync",
             "cp.async.bulk.tensor", "wgmma.mma_async", "wgmma", "setmaxnreg",
             "shared.static_bytes", "shared.dynamic", "smem_bytes", "threads", "entries"]
    try:
        return (order.index(base), key)
    except ValueError:
        return (len(order), key)


def format_diff(rows: list[tuple[str, object, object]], a_name: str = "good",
                b_name: str = "bad") -> str:
    """A markdown table of `diff` rows (a single line when nothing differs)."""
    if not rows:
        return f"PTX signatures of {a_name} and {b_name} are identical."
    out = [f"| PTX signature | {a_name} | {b_name} |", "|---|---:|---:|"]
    for key, va, vb in rows:
        out.append(f"| `{key}` | {_cell(va)} | {_cell(vb)} |")
    return "\n".join(out)


def _cell(v) -> str:
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "no"
    return str(v)


def ptx_of_script(script: str | os.PathLike, argv: list[str] | tuple[str, ...] = (), *,
                  python: str | None = None, env: dict[str, str] | None = None,
                  cwd: str | os.PathLike | None = None, arch: str = "sm_90a",
                  timeout: float = 600.0) -> tuple[str, dict]:
    """Run a kernel script in compile-only mode (no GPU needed) and return (ptx_text, result).

    The script gets ``argv + ["--compile-only", "--ptx-out", <tmp>/kernel.ptx]`` with
    ``BISECTK_COMPILE_ONLY=1`` and ``CUTE_DSL_ARCH`` (default ``arch``) in its environment;
    ``result`` is the metrics dict of its ``BISECTK_RESULT`` line (``smem_bytes`` among them),
    empty when it printed none.  Raises PtxError when the compile fails or writes no PTX.
    """
    with tempfile.TemporaryDirectory(prefix="bisectk-ptx-") as tmp:
        out = Path(tmp) / "kernel.ptx"
        cmd = [python or sys.executable, str(script), *argv, "--compile-only", "--ptx-out", str(out)]
        e = dict(os.environ)
        e.update(env or {})
        e["BISECTK_COMPILE_ONLY"] = "1"
        e.setdefault("CUTE_DSL_ARCH", arch)
        p = run_process(cmd, cwd=cwd, env=e, timeout=timeout)   # contained like every subject run
        if not p.started:
            raise PtxError(f"compile-only run could not start: {p.error}")
        if p.timed_out:     # its whole process tree was ended (run_process), the compiler's children too
            raise PtxError(f"build hang: the compile-only run of {Path(script).name} was still running after "
                           f"{timeout:g} s (--timeout); its processes were killed: {' '.join(cmd)}")
        result: dict = {}
        for line in p.stdout.splitlines():
            if line.startswith("BISECTK_RESULT "):
                try:
                    result = json.loads(line[len("BISECTK_RESULT "):])
                except json.JSONDecodeError:
                    pass
        if p.exit_code != 0 and re.search(r"unrecognized arguments:.*--compile-only", p.stderr):
            raise PtxError(f"{Path(script).name} does not take --compile-only/--ptx-out: not a CuTe DSL "
                           "kernel, so there is no PTX to compare")
        missing = re.search(r"ModuleNotFoundError: No module named '([\w.]+)'", p.stderr)
        if p.exit_code != 0 and missing:
            module = missing.group(1).split(".")[0]
            raise PtxError(f"missing Python module '{module}': {install_hint(module)} (the compile-only run of "
                           f"{Path(script).name} needs it)")
        if p.exit_code != 0:
            text = p.stderr or p.stdout
            # the reason on the first line, which the table and the one-line error keep: a
            # traceback's last line, argparse's complaint
            why = next((line.strip() for line in reversed(text.splitlines()) if line.strip()), "no output")
            raise PtxError(f"compile-only run of {Path(script).name} exited {p.exit_code or p.signal}: {why[:300]}\n"
                           f"{' '.join(cmd)}\n{text[-1500:]}")
        if not out.exists():
            raise PtxError(f"compile-only run wrote no PTX: {' '.join(cmd)}")
        return out.read_text(), result


def signature_of_script(script, argv=(), **kw) -> dict:
    """`signature(...).flat()` of a compile-only run, plus the subject's reported `smem_bytes`."""
    text, result = ptx_of_script(script, argv, **kw)
    flat = signature(text).flat()
    if result.get("smem_bytes") is not None:
        flat["smem_bytes"] = result["smem_bytes"]
    return flat


def main(argv: list[str] | None = None) -> int:
    """`python -m bisectk.ptx A.ptx B.ptx` prints the signature diff of two PTX files."""
    import argparse

    ap = argparse.ArgumentParser(prog="python -m bisectk.ptx", description=main.__doc__)
    ap.add_argument("a")
    ap.add_argument("b", nargs="?")
    ns = ap.parse_args(argv)
    try:
        sa = signature(_read_ptx(ns.a))
        sb = None if ns.b is None else signature(_read_ptx(ns.b))
    except PtxError as exc:
        print(f"bisectk: {exc}", file=sys.stderr)
        return 2
    if sb is None:
        print(json.dumps(sa.flat(), indent=1, sort_keys=True))
        return 0
    print(format_diff(diff(sa, sb), Path(ns.a).name, Path(ns.b).name))
    return 0


def _read_ptx(path: str) -> str:
    """A PTX file's text; PtxError, in one line, when it is missing, a directory or not text
    (a cubin given for its PTX)."""
    try:
        return Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise PtxError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise PtxError(f"{path}: is a directory, not a PTX file") from None
    except UnicodeDecodeError:
        raise PtxError(f"{path}: not a text file (PTX is text; a cubin or an ELF binary is not)") from None
    except (OSError, ValueError) as exc:
        raise PtxError(f"{path}: cannot read it ({getattr(exc, 'strerror', None) or exc})") from None


if __name__ == "__main__":
    sys.exit(main())
