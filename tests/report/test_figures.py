"""What the report's pictures show (bisectk/report/figures.py), and that the drawings carry it:
the run matrix has a row per configuration run, the culprit is marked, the posterior sums to 1 or
says it is partial. Content, not pixels: the models are read, and the SVGs by their element ids."""
import re

import pytest

from bisectk.engine.records import TriageRecord
from bisectk.outcome import FailKind, Outcome, Run
from bisectk.report import figures as F
from tests.report.records import (ablation, attempt, bisect_record, check, commit, diff_record, hunk,
                                  interaction_record, ok, subject, wrong)

from bisectk.report.draw import svg


def fill(text: str, gid: str) -> str:
    """The fill colour of the first shape inside the SVG group with this id."""
    return re.search(rf'id="{re.escape(gid)}">\s*<path[^>]*?style="fill: (#[0-9a-f]+)', text).group(1)


def ids(text: str, prefix: str) -> list[str]:
    return re.findall(rf'id="({re.escape(prefix)}[^"]*)"', text)


def test_run_matrix_has_one_row_per_configuration_run():
    rec = interaction_record()
    m = F.run_matrix(rec)
    assert m.factors == ("warps", "mma_warp", "tile", "seed")
    assert [r.label for r in m.rows] == ["good (endpoint)", "bad (endpoint)", "1. split", "2. split",
                                         "3. split-check", "4. confirm-removal"]
    assert len(m.rows) == len(rec.attempts) + 2
    assert m.rows[0].applied == (False,) * 4 and m.rows[1].applied == (True,) * 4
    assert m.rows[4].applied == (False, True, True, False)        # mma_warp and tile, as attempt 3 applied
    assert [r.outcome for r in m.rows] == ["pass", "fail", "fail", "pass", "pass", "pass"]
    drawn = svg("run-matrix", m)
    assert len(ids(drawn, "matrix-row-")) == len(m.rows)
    assert sorted(ids(drawn, "culprit-")) == ["culprit-mma_warp", "culprit-warps"]   # tile and seed unmarked
    assert "warps ★" in drawn                                       # the culprit's name is text, marked


def test_run_matrix_of_thousands_of_factors_and_attempts_keeps_the_culprits_and_counts_the_rest():
    """An 8,192-factor ablation's Markdown and HTML reports took 417 s and 2.3 GB, most of it
    drawing a patch per cell of a 27 x 8,192 matrix nobody can read (a 49 MB page); at 30,000
    factors it did not finish. The matrix keeps the culprits and the unresolved factors, then up
    to MAX_COLUMNS; the first and last attempts up to MAX_ROWS; and says what it left out."""
    factors = [f"f{k}" for k in range(5000)]
    attempts = [attempt(i, factors[i % 7::7], "pass" if i % 3 else "fail") for i in range(1, 101)]
    rec = ablation(factors, ["f4321"], attempts, unresolved_factors=("f4999", "f17"))
    m = F.run_matrix(rec)
    assert len(m.factors) == F.MAX_COLUMNS and m.hidden_factors == 5000 - F.MAX_COLUMNS
    assert {"f4321", "f4999", "f17"} <= set(m.factors) and list(m.factors) == sorted(m.factors, key=factors.index)
    assert len(m.rows) == F.MAX_ROWS + 2 and m.hidden_rows == 100 - F.MAX_ROWS
    labels = [r.label for r in m.rows]
    assert labels[2] == "1. split" and labels[-1] == "100. split" and "31. split" not in labels
    row = m.rows[labels.index("1. split")]   # attempt 1 applied f1, f8, f15, ...: its cells say so
    assert row.applied == tuple(int(f[1:]) % 7 == 1 for f in m.factors)
    title = next(t for name, t, _ in F.pictures(rec) if name == "run-matrix")
    assert "in part" in title
    drawn = svg("run-matrix", m)
    assert len(ids(drawn, "matrix-row-")) == len(m.rows) and ids(drawn, "culprit-") == ["culprit-f4321"]
    assert "4960 more factor(s)" in drawn and "40 attempt(s) in the middle not shown" in drawn


def test_interaction_picture_reads_each_subset_of_the_culprit_set():
    inter = F.interaction(interaction_record())
    by = {n.members: n for n in inter.nodes}
    assert inter.interaction and set(by) == {(), ("warps",), ("mma_warp",), ("warps", "mma_warp")}
    assert (by[()].outcome, by[()].exact) == ("pass", True)                        # the good endpoint
    assert (by[("warps",)].outcome, by[("warps",)].exact) == ("pass", True)
    # mma_warp alone was only run together with tile (cleared): read off that run, and said so
    assert (by[("mma_warp",)].outcome, by[("mma_warp",)].exact) == ("pass", False)
    assert (by[("warps", "mma_warp")].outcome, by[("warps", "mma_warp")].exact) == ("fail", True)
    drawn = svg("interaction", inter)
    assert ids(drawn, "culprit-set") and "warps + mma_warp" in drawn and "(with cleared factors)" in drawn


def test_each_of_two_failing_sets_gets_its_interaction_picture():
    """softmax-two-sets ({fast, n} and {fast, block}): the one picture titled 'The culprit set' showed
    {fast, n} alone (the record's culprits are the first set's), and block, a culprit of set 2, was
    in no picture. Each set has its own now, its subsets never read off a run holding the other
    set's member (fast with n fails for set 1, which says nothing of fast with block)."""
    sets = ({"members": ["fast", "n"], "interaction": True, "proof": [{"config": ["n"], "outcome": "pass"}]},
            {"members": ["fast", "block"], "interaction": True, "proof": [{"config": ["block"], "outcome": "pass"}]})
    rec = ablation(["fast", "n", "block", "rows"], ["fast", "n"], [
        attempt(1, ["fast", "n"], "fail"),
        attempt(2, ["fast"], "pass"),
        attempt(3, ["fast", "n", "block"], "fail", phase="confirm-removal"),
        attempt(4, ["fast", "block", "rows"], "fail", phase="split-check"),
    ], interaction=True, proof=sets[0]["proof"], sets=sets)
    named = {n: (title, model) for n, title, model in F.pictures(rec)}
    assert list(named) == ["run-matrix", "interaction-set-1", "interaction-set-2"], list(named)
    title, second = named["interaction-set-2"]
    assert title.startswith("Failing set 2") and second.culprits == ("fast", "block") and second.interaction
    by = {n.members: (n.outcome, n.exact) for n in second.nodes}
    assert by[("block",)] == ("pass", True) and by[("fast",)] == ("pass", True)
    assert by[("fast", "block")] == ("fail", False)     # read off attempt 4 (rows is cleared); attempt 3 holds n
    assert named["interaction-set-1"][1].culprits == ("fast", "n")
    assert "fast + block" in svg("interaction", second)


def test_interaction_subset_never_run_is_not_run():
    rec = ablation(["a", "b", "c"], ["a", "b", "c"], [attempt(1, ["a", "b", "c"], "fail")], interaction=True)
    by = {n.members: n.outcome for n in F.interaction(rec).nodes}
    assert len(by) == 8 and by[("a", "b", "c")] == "fail" and by[("a",)] == F.NOT_RUN


def test_commit_line_places_every_tested_commit_and_the_culprit():
    rec = bisect_record(n=12, first_bad=7, skipped=(4,))
    line = F.commit_line(rec)
    assert line.n == 12 and line.first_bad == 7 and line.last_good == (6,) and line.skipped == (4,)
    # --good is no candidate: it sits left of the line, at -1
    assert [(t.index, t.passes, t.fails) for t in line.tested] == [(-1, 1, 0), (6, 3, 0), (7, 0, 2), (11, 0, 1)]
    assert line.first_bad_label.startswith(commit(7)["short"])
    drawn = svg("commit-line", line)
    assert {"commit--1-pass", "commit-6-pass", "commit-7-fail", "commit-11-fail"} <= set(ids(drawn, "commit-"))
    assert ids(drawn, "culprit-commit") and "first bad: " + commit(7)["short"] in drawn


def test_posterior_from_the_full_marginal_sums_to_one_and_marks_the_culprit():
    marginal = [{"index": i, "short": commit(i)["short"], "p": p} for i, p in ((5, 0.004), (6, 0.006), (7, 0.99))]
    post = F.posterior(bisect_record(flaky=True, marginal=marginal))
    assert not post.partial and post.total == pytest.approx(1.0) and post.culprit == 7
    assert [b[0] for b in post.bars] == [5, 6, 7]
    drawn = svg("posterior", post)
    assert sorted(ids(drawn, "bar-")) == ["bar-5", "bar-6", "bar-7"]
    assert "the bars sum to 1.0000" in drawn and "P = 0.9900" in drawn
    assert fill(drawn, "bar-7") == "#c62828" and fill(drawn, "bar-5") != "#c62828"     # the culprit's bar is red


def test_posterior_of_only_the_top_entries_is_labelled_partial():
    top = [{"sha": commit(7)["sha"], "short": commit(7)["short"], "p": 0.95},
           {"sha": commit(6)["sha"], "short": commit(6)["short"], "p": 0.03}]
    post = F.posterior(bisect_record(flaky=True, posterior=top))
    assert post.partial and post.total == pytest.approx(0.98)
    assert "partial" in svg("posterior", post)
    assert F.posterior(bisect_record(flaky=False, posterior=top)) is None   # deterministic: no posterior


def test_flaky_search_hands_the_record_a_posterior_that_sums_to_one():
    from bisectk.search.history import SearchOptions, search_dag
    truth, calls = 23, [0]

    def oracle(i):
        calls[0] += 1
        return Outcome.FAIL if i >= truth and calls[0] % 3 else Outcome.PASS    # bad commits fail 2 runs in 3
    chain = [()] + [(i - 1,) for i in range(1, 40)]
    result = search_dag(chain, oracle, options=SearchOptions(flaky=True), observations=[(39, Outcome.FAIL)])
    assert result.culprit == truth and len(result.marginal) > 1
    assert sum(p for _, p in result.marginal) == pytest.approx(1.0, abs=1e-4)
    assert dict(result.marginal)[truth] == pytest.approx(result.confidence, abs=1e-6)


def test_hunk_strips_show_every_hunk_with_the_culprits_marked():
    index = [hunk("kernel/a.py", 3, 5), hunk("kernel/a.py", 40, 41), hunk("kernel/b.py", 10, 12),
             hunk("kernel/c.bin", 0, 0, "replace")]
    strips = F.hunk_strips(diff_record(index, {"kernel/a.py:40-40", "kernel/c.bin:replace"}))
    assert [f.file for f in strips.files] == ["kernel/a.py", "kernel/b.py", "kernel/c.bin"]
    marks = {h.id: h for f in strips.files for h in f.hunks}
    assert len(marks) == 4 and {i for i, h in marks.items() if h.culprit} == {"kernel/a.py:40-40", "kernel/c.bin:replace"}
    assert marks["kernel/c.bin:replace"].whole == "replace" and strips.files[0].length >= 41
    drawn = svg("hunks", strips)
    assert sorted(i for i in ids(drawn, "hunk-") if i.endswith("-culprit")) == [
        "hunk-kernel/a.py:40-40-culprit", "hunk-kernel/c.bin:replace-culprit"]
    assert "kernel/a.py:40-40" in drawn


def test_hunk_strips_keep_culprit_files_when_there_are_too_many():
    index = [hunk(f"f{i:03d}.py", 1, 2) for i in range(F.MAX_FILES + 10)]
    strips = F.hunk_strips(diff_record(index, {"f049.py:1-1"}))
    assert len(strips.files) == F.MAX_FILES and strips.hidden_files == 10
    assert "f049.py" in [f.file for f in strips.files]


def hang(timeline, duration=3.0) -> Run:
    return Run(Outcome.FAIL, FailKind.HANG, signature="timeout after 3.0 s", duration_s=duration, timed_out=True,
               progress="hung after 'launch', 2.0 s past the point where the good run had finished",
               timeline=tuple(timeline))


def passing(timeline, duration=1.0) -> Run:
    return Run(Outcome.PASS, duration_s=duration, timeline=tuple(timeline))


def test_progress_timeline_of_a_hang_against_the_good_run():
    # as the watchdog records them (run/progress.py): (key, seconds) points, then ("<end>", seconds)
    good = passing([("phase:imports", 0.2), ("compiled # kernels", 0.6), ("phase:launch", 0.7),
                    ("phase:synchronized", 0.75), ("<end>", 0.8)], duration=0.8)
    hung = hang([("phase:imports", 0.3), ("compiled # kernels", 0.9), ("phase:launch", 1.0), ("<end>", 3.0)])
    prog = F.progress(check([good], [hung]))
    assert [p[1] for p in prog.good.points] == ["imports", "compiled # kernels", "launch", "synchronized"]
    assert prog.good.end_s == 0.8 and prog.hung.end_s == 3.0
    assert prog.stalled_after == "launch" and prog.silent_s == pytest.approx(2.0)
    assert prog.good_needed_s == pytest.approx(0.1)     # from 'launch' to its end, the good run needed 0.1 s
    assert prog.words.startswith("hung after 'launch'")
    drawn = svg("progress", prog)
    assert len(ids(drawn, "point-good-")) == 4 and len(ids(drawn, "point-hung-")) == 3
    assert "silent after &#x27;launch&#x27;" in drawn or "silent after 'launch'" in drawn
    assert "watchdog: hung after" in drawn


def test_no_progress_timeline_no_picture():
    sentence = Run(Outcome.FAIL, FailKind.HANG, signature="timeout", duration_s=2.0, progress="after line 3")
    assert F.progress(check([ok()], [sentence])) is None          # no timeline on either run
    assert F.progress(check([passing([("phase:launch", 0.1), ("<end>", 0.2)])], [sentence])) is None
    assert not [n for n, _, _ in F.pictures(bisect_record()) if "progress" in n]


def test_an_unreadable_timeline_loses_its_picture_not_the_report():
    damaged = Run(Outcome.FAIL, FailKind.HANG, signature="timeout", duration_s=2.0, timeline=(("launch",), ("x", "y")))
    assert F.timeline(damaged) is None
    good = passing([("phase:launch", 0.1), ("<end>", 0.2)])
    assert F.timeline(good).points == ((0.1, "launch"),) and F.timeline(good).end_s == 1.0   # the run's duration
    assert F.progress(check([good], [damaged])) is None


def test_slow_metric_against_the_threshold():
    def slow(v):
        return Run(Outcome.FAIL, FailKind.SLOW, signature=f"t {v}", metrics={"us": v}, duration_s=0.2, failed=("us",))
    rec = ablation(["depth", "tiles"], ["depth"], [attempt(1, ["depth"], "fail", metrics={"us": 690.0}),
                                                   attempt(2, ["tiles"], "pass", metrics={"us": 300.0})],
                   endpoints=check([ok(us=380.0), ok(us=400.0), ok(us=420.0)], [slow(700.0)]),
                   subject=subject(["depth", "tiles"], slow_factor=1.4, slow_metric="us"))
    s = F.slow_metric(rec)
    assert s.metric == "us" and s.baseline == 400.0 and s.threshold == pytest.approx(560.0)
    assert [(p.label, p.value, p.outcome) for p in s.points] == [
        ("good (endpoint)", 400.0, "pass"), ("bad (endpoint)", 700.0, "fail"), ("1. depth", 690.0, "fail"),
        ("2. tiles", 300.0, "pass")]
    drawn = svg("slow-metric", s)
    assert ids(drawn, "threshold") and len(ids(drawn, "point-")) == 4 and "threshold 1.4 x 400 = 560" in drawn
    assert F.slow_metric(interaction_record()) is None        # a wrong result: no SLOW picture


def test_pictures_per_record_kind():
    assert [n for n, _, _ in F.pictures(interaction_record())] == ["run-matrix", "interaction"]
    assert [n for n, _, _ in F.pictures(bisect_record())] == ["commit-line"]
    assert [n for n, _, _ in F.pictures(bisect_record(flaky=True, marginal=[{"index": 7, "short": "x", "p": 1.0}]))] \
        == ["commit-line", "posterior"]
    d = diff_record([hunk("k.py", 1, 2)], {"k.py:1-1"})
    t = TriageRecord(command="triage", endpoints=None, ok=True, complete=True, interrupted=False, runs=1,
                     observations=1, wall_s=1.0, bisect=bisect_record().to_dict(), diff=d.to_dict())
    assert [n for n, _, _ in F.pictures(t)] == ["bisect-commit-line", "diff-hunks"]
    assert wrong().kind is FailKind.WRONG


ONLY_OWN_FONTS = """
import matplotlib, matplotlib.font_manager as fm
from pathlib import Path
own = str(Path(matplotlib.get_data_path()))
fm.fontManager.ttflist = [f for f in fm.fontManager.ttflist if f.fname.startswith(own)]
fm.fontManager.afmlist = [f for f in fm.fontManager.afmlist if f.fname.startswith(own)]
fm.json_dump(fm.fontManager, Path(matplotlib.get_cachedir(), f"fontlist-v{fm.FontManager.__version__}.json"))
print(sorted({f.name for f in fm.fontManager.ttflist}))
"""


def test_no_font_warnings_where_only_matplotlibs_own_fonts_exist(tmp_path):
    """A machine without extra fonts (no Liberation, no Arial: what installing a browser pulls in)
    is made by a matplotlib font cache that lists only the fonts matplotlib ships. Drawing every
    picture of a command there prints 0 lines of font warnings (issue 21: 280-858 per command)."""
    import os
    import subprocess
    import sys
    from tests.conftest import ROOT, bisectk
    env = {"MPLCONFIGDIR": str(tmp_path / "mpl")}
    made = subprocess.run([sys.executable, "-c", ONLY_OWN_FONTS], capture_output=True, text=True,
                          env={**os.environ, **env}, check=True)
    assert "Liberation Sans" not in made.stdout and "DejaVu Sans" in made.stdout
    p = bisectk("ablate", ROOT / "variants" / "cpu" / "attention-warps.toml", "--html", tmp_path / "w.html",
                "--ledger", tmp_path / "l.db", "--warm", env=env, timeout=600, check=0)   # torch once, not 49 times
    assert "HTML report written to" in p.stdout and "(2 picture(s))" in p.stdout
    assert [line for line in p.stderr.splitlines() if "font" in line.lower()] == []
    assert "font-family: 'DejaVu Sans'" in (tmp_path / "w.html").read_text()


def test_a_slow_metric_that_is_no_finite_number_is_drawn_to_the_edge_and_named():
    """A subject that printed `{"t": Infinity}` (the slowest a time can be): matplotlib drew its
    bar as an empty path with RuntimeWarnings on stderr, so the slowest configuration was the one
    missing from the picture."""
    import warnings
    s = F.SlowMetric("t", (F.MetricPoint("good (endpoint)", 1.0, "pass"), F.MetricPoint("bad (endpoint)", float("inf"), "fail"),
                           F.MetricPoint("1. a", float("nan"), "unresolved"), F.MetricPoint("2. b", 2.0, "fail")),
                     baseline=1.0, factor=1.5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        drawn = svg("slow-metric", s)
    bars = {i: re.search(rf'<g id="{i}">\s*<path d="([^"]*)"', drawn).group(1) for i in ids(drawn, "point-")}
    assert len(bars) == 4 and "L" in bars["point-1"], bars        # the infinite bar has a length
    assert re.search(r">\s*inf\s*</text>", drawn) and re.search(r">\s*nan\s*</text>", drawn)
    assert ids(drawn, "threshold") and "threshold 1.5 x 1 = 1.5" in drawn
