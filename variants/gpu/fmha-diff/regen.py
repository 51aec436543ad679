#!/usr/bin/env python3
"""Rebuild good/ and bad/ from kernels/cutedsl/fmha_wgmma.py and _common.py.

good/ is a verbatim copy of the two files.  bad/ applies the edits below: ten changes in separate
places (ten diff hunks), one of which (`consumer-regs`) makes the kernel hang; the rest leave the
result correct.  Run it after changing the kernel: `python variants/gpu/fmha-diff/regen.py`.
"""

from pathlib import Path

HERE = Path(__file__).resolve().parent
SRC = HERE.parents[2] / "kernels" / "cutedsl"

# (file, old, new, what it does)
EDITS = [
    ("fmha_wgmma.py",
     '"""Attention forward on Hopper with wgmma, a TMA producer warpgroup and register reallocation (CuTe DSL).',
     '"""Attention forward (Hopper, CuTe DSL): wgmma, a TMA producer warpgroup, register reallocation.',
     "docstring wording"),
    ("fmha_wgmma.py",
     "WG_ROWS = 64          # query rows per consumer warpgroup (one m64 wgmma)",
     "WG_ROWS = 64          # rows of Q per consumer warpgroup: the M of one wgmma",
     "comment"),
    ("fmha_wgmma.py",
     'p.add_argument("--q-scale", type=float, default=1.0,',
     'p.add_argument("--q-scale", type=float, default=0.5,',
     "smaller inputs (still correct)"),
    ("fmha_wgmma.py",
     'p.error("q-len must be a multiple of 64*consumer-wgs and kv-len of block-n")',
     'p.error("--q-len must be a multiple of 64 x --consumer-wgs, --kv-len of --block-n")',
     "error message"),
    ("fmha_wgmma.py",
     "a.consumer_regs = 240 if a.consumer_wgs == 2 else 256",
     "a.consumer_regs = 256",
     "THE CULPRIT: consumer warpgroups ask 256 registers also with 12 warps: hang at setmaxnreg.inc"),
    ("fmha_wgmma.py",
     "                            m_scaled = m_new * scale_log2\n",
     "                            m_scaled = scale_log2 * m_new\n",
     "operand order of a product"),
    ("fmha_wgmma.py",
     "# P in the input type, in the A-operand register layout",
     "# P converted to fp16/bf16; the accumulator and A-operand layouts agree element by element",
     "comment"),
    ("fmha_wgmma.py",
     "# this warpgroup's 64 x D rows of O over its own Q slot (its wgmmas are done)",
     "# O rows of this warpgroup go over its Q slot, which no wgmma reads any more",
     "comment"),
    ("fmha_wgmma.py",
     'metrics["kernel"] = "fmha_wgmma"',
     'metrics["kernel"] = "fmha_wgmma_v2"',
     "result label"),
    ("_common.py",
     'p.add_argument("--iters", type=int, default=20,',
     'p.add_argument("--iters", type=int, default=10,',
     "fewer timed launches"),
]


def main() -> None:
    for side in ("good", "bad"):
        (HERE / side).mkdir(exist_ok=True)
    texts = {name: (SRC / name).read_text() for name in ("fmha_wgmma.py", "_common.py")}
    for name, text in texts.items():
        (HERE / "good" / name).write_text(text)
    for name, old, new, _what in EDITS:
        assert texts[name].count(old) == 1, (name, old)
        texts[name] = texts[name].replace(old, new)
    for name, text in texts.items():
        (HERE / "bad" / name).write_text(text)


if __name__ == "__main__":
    main()
