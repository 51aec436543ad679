"""Reports for `bisectk bisect`, read from a BisectRecord: the terminal view and the debug log (the
replayable log is engine/gitlog.py's, which writes and reads it).

Abstractions
------------
to_debuglog   -- a debug log: summary, last good vs first bad, one attempt per run in the order
                 the runs were made, the posterior when flaky.
print_summary -- the end-of-run terminal view.

The words follow the record's terms (git's --term-old/--term-new): "first bad commit" for a
regression, "first fixed commit" for --find-fix, "first <new> commit" for terms of the user's.
"""

from __future__ import annotations

from rich.console import Console

from bisectk.engine.records import BisectRecord
from bisectk.names import c_quoted, counted
from bisectk.report import stuck
from bisectk.report.advice import next_steps, step_words
from bisectk.report.debuglog import AttemptEntry, DebugLog, table
from bisectk.report.safe import strong
from bisectk.report.words import (warning_lines, confidence_words, endpoint_lines, failure_line, slow_line, problem_lines, problem_text, runs_words, same_inputs,
                                  search_runs_of, stopped_line, title_words, wall_words)

CONCLUSION = {"fail": "Bad: the first bad commit is this one or one of its ancestors.",
              "pass": "Good: the first bad commit is not among its ancestors.",
              "unresolved": "Untestable (build failure or a different failure): skipped."}


def conclusion(rec: BisectRecord, outcome: str) -> str:
    """What a run of a commit concluded, in the record's terms."""
    old, new = rec.terms[0], rec.terms[-1]
    if rec.terms == ("good", "bad") and not rec.find_fix:
        return CONCLUSION[outcome]
    side = {"pass": "fail", "fail": "pass"}.get(outcome, outcome) if rec.find_fix else outcome
    return {"fail": f"{new.capitalize()}: the first {new} commit is this one or one of its ancestors.",
            "pass": f"{old.capitalize()}: the first {new} commit is not among its ancestors.",
            "unresolved": CONCLUSION["unresolved"]}[side]


def first_words(rec) -> str:
    """'first bad commit', 'first fixed commit', 'first <new> commit'."""
    return f"first {rec.terms[-1]} commit"


def last_words(rec) -> str:
    return f"last {rec.terms[0]}"


def verdict_words(rec: BisectRecord, text: str) -> str:
    """Under git bisect's protocol a non-zero exit is simply 'bad'."""
    return text.replace("FAIL bad ", "bad ") if rec.protocol == "git" else text


def _short(c: dict) -> str:
    return c["sha"][:10]


def to_debuglog(rec: BisectRecord) -> DebugLog:
    if rec.manual:
        return _manual_debuglog(rec)
    title = f"bisect {rec.good[:10]}..{rec.bad[:10]}: {title_words(rec.endpoints, lambda t: verdict_words(rec, t))}"
    warned = warning_lines(rec.warnings)
    if not rec.ok:
        return DebugLog(title, "Inconclusive: endpoints unusable", problem_text(rec.endpoints), rec.environment,
                        summary=warned)
    fb = rec.first_bad
    status = (f"Resolved -- {first_words(rec)} {_short(fb)}" if fb and rec.complete
              else f"Open -- {len(rec.candidates)} candidate(s) remain" if not rec.interrupted
              else f"Open ({rec.stop_reason}) -- {len(rec.candidates)} candidate(s) remain")
    log = DebugLog(title, status, f"--good passes, --bad fails: {verdict_words(rec, rec.endpoints.bad.describe())}",
                   rec.environment, related=list(fb.get("files") or ()) if fb else [])
    if fb:
        log.summary.append(f"{first_words(rec).capitalize()}: {strong(_short(fb))} {fb['subject']} ({fb['author']}, "
                           f"{fb['date']}); {last_words(rec)}: {', '.join(_short(p) for p in rec.last_good) or '-'}.")
        if line := fresh_build_line(rec):
            log.summary.append(line[0].upper() + line[1:] + ".")
    else:
        log.summary.append(f"The {first_words(rec)} is one of: "
                           + ", ".join(f"{_short(c)} {c['subject']}" for c in rec.candidates) + ".")
    log.summary += facts_lines(rec)
    log.summary += [
        f"{counted(rec.commits, 'commit')} in range; {counted(rec.observations, 'observation')} ({runs_words(rec.runs, rec.observations, rec)}); "
        + confidence_words(rec)
        + (f" (flake-aware: estimated P(bad commit fails) = {rec.fail_prob:.2f})" if rec.flaky and rec.fail_prob else "")
        + ".",
        *endpoint_lines(rec.endpoints),
        *([rates_line(rec) + "."] if rates_line(rec) else []),
        *([separation_line(rec) + "."] if rec.separable is False else []),
    ]
    if rec.skipped:
        log.summary.append(f"Skipped (untestable): {', '.join(_short(c) for c in rec.skipped)}.")
    log.summary += warned
    log.differences_title = f"Key Differences: {last_words(rec)} vs {first_words(rec)[:-7]}"
    log.differences_header = ["", "commit", "subject", "files changed", "verdict"]
    log.differences = [[f"{last_words(rec)} (parent)", _short(p), p["subject"], "", p.get("verdict", "")]
                       for p in rec.last_good]
    for c in ([fb] if fb else rec.candidates):
        log.differences.append([first_words(rec)[:-7] if fb else "candidate", _short(c), c["subject"],
                                ", ".join(c.get("files") or ()), ""])
    for a in rec.attempts:
        log.attempts.append(AttemptEntry(
            title=f"{a.label} ({a.phase})",
            hypothesis=(f"The failure was fixed in {a.applied[0][:10]} or one of its ancestors." if rec.find_fix else
                        f"The failure was introduced in {a.applied[0][:10]} or one of its ancestors."),
            what=f"checked out {a.applied[0][:10]} in a worktree, built and ran the subject",
            result=verdict_words(rec, a.verdict) + (" (from the ledger)" if a.from_ledger else f" ({a.time_s:.2f} s)"),
            conclusion=conclusion(rec, a.outcome)))
    if rec.hangs and stuck.markdown(rec.hangs):
        log.sections.append(("Where the hang is stuck", stuck.markdown(rec.hangs)))
    if rec.posterior:
        log.sections.append(("Posterior over the first bad commit",
                             table(["commit", "P(first bad)"], [[p["short"], f"{p['p']:.4f}"] for p in rec.posterior])))
    log.next_steps = next_steps(rec)
    return log


def rates_line(rec: BisectRecord) -> str | None:
    """Both failure rates with their 95% intervals, where the two-rate model or a switch to the
    flake model was used (a deterministic answer's rates say nothing new)."""
    r = rec.rates
    if not r or not (rec.flaky or rec.switched or rec.separable is False):
        return None
    lo_o, hi_o = r["p_old_ci95"]
    lo_n, hi_n = r["p_new_ci95"]
    before = f"the first {rec.terms[1]} commit" if rec.find_fix else "the culprit"
    return (f"failure rate before {before} {r['p_old']:.2f} [{lo_o:.2f}, {hi_o:.2f}] ({counted(r['old_runs'], 'run')}), "
            f"from it on {r['p_new']:.2f} [{lo_n:.2f}, {hi_n:.2f}] ({counted(r['new_runs'], 'run')}), 95% intervals")


def separation_line(rec: BisectRecord) -> str:
    return ("not separable: the two failure rates could not be told apart at the asked confidence within "
            "the run budget" + (f"; about {rec.more_runs} more runs would probably separate them"
                                if rec.more_runs else ""))


BESIDE = "untracked, beside "     # the state of a file copied because it lies beside the script
SHOWN_BESIDE = 5


def command_lines(files) -> list[str]:
    """Which copy of each file a command names runs (spaces/command.py CommandFile dicts): the
    user's, copied into each commit's worktree (spaces/yours.py) or run by its path, or each
    commit's own; the untracked files copied beside a script in one line."""
    lines, beside = [], {}
    for f in files:
        if f["use"] == "yours" and f["state"].startswith(BESIDE):
            beside.setdefault(f["state"][len(BESIDE):], []).append(f["word"])
        elif f["use"] == "yours":
            lines.append(f"command: {f['word']} is your file {f['path']} ({f['state']}), "
                         + (f"copied into each commit's worktree at {f['copy']} and run there, as git bisect run "
                            "sees it in your checkout" if f.get("copy") else "run in each commit's worktree"))
        elif f["use"] == "edited":
            by = f["state"].rsplit(", named by ", 1)[-1]
            lines.append(f"command: {f['word']}, which {by} names, is modified in your checkout: each commit's own "
                         f"{f['word']} runs, not your edit (git bisect run's checkout would carry the edit to each "
                         "commit whose file it is made on, and could answer otherwise); commit it, or copy it to "
                         "an untracked file and name that")
        elif f["use"] == "built":
            lines.append(f"command: {f['word']} in your checkout is {f['state']}")
        elif f["use"] == "left":
            lines.append(f"command: {f['state'].replace('beside it', 'beside ' + f['word'], 1)} into the worktrees "
                         f"(git bisect run would see them in {f['path']}): a helper your script needs there must be "
                         "tracked, or named by its absolute path")
        else:
            lines.append(f"command: {f['word']} is tracked: each commit's own {f['path']} runs")
    for word, names in beside.items():
        shown = ", ".join(names[:SHOWN_BESIDE]) + (f" and {len(names) - SHOWN_BESIDE} more" if len(names) > SHOWN_BESIDE
                                                    else "")
        lines.append(f"command: {len(names)} untracked file{'s' if len(names) > 1 else ''} beside {word} "
                     f"copied with it, as git bisect run would see {'them' if len(names) > 1 else 'it'}: {shown}")
    return lines


def facts_lines(rec: BisectRecord) -> list[str]:
    """How the range and the command were read: several goods, merge bases, the pathspec, which
    copy of a --run file ran; a line each (the terminal and the debug log both say them)."""
    lines = []
    if len(rec.goods) > 1:
        lines.append(f"{len(rec.goods)} {'--bad' if rec.find_fix else '--good'} commits, all counted: "
                     + " ".join(g[:10] for g in rec.goods))
    for m in rec.merge_bases:
        lines.append(f"merge base {m['short']} ({m['subject']}) tested first: {m['side']}"
                     + (f" [{verdict_words(rec, m['verdict'])}]" if m.get("verdict") else ""))
    if rec.paths:
        lines.append(f"pathspec: {' '.join(rec.paths)} ({counted(rec.commits, 'candidate commit')} touch it or are --bad)")
    lines += command_lines(rec.command_files)
    if rec.repeats > 1:
        lines.append(f"each pass confirmed by up to {rec.repeats} runs (the failure is intermittent)")
    if (rec.confirmation or {}).get("steady") and not rec.switched:
        lines.append(f"confirmed by one more run of the {first_words(rec)} and of each parent: --no-flaky declared "
                     "the failure deterministic (an intermittent one could slip through)")
    return lines


_FRESH = {"pass": "passes", "fail": "fails", "unresolved": "could not be tested"}


def fresh_build_line(rec: BisectRecord) -> str | None:
    """Where the answer, run again from builds made from scratch (engine/fresh_build.py), did not
    hold: which commit gave the other outcome, and what to do; None where it held or was not run."""
    fresh = rec.fresh_build or {}
    if not fresh.get("stale"):
        return None
    said = ", ".join(f"{p['short']} {_FRESH.get(p['fresh'], p['fresh'])}" for p in fresh.get("points", ())
                     if p["fresh"] != p["searched"])
    return (f"built from scratch (its worktree's ignored files removed), {said}: the answer rests on what other "
            "commits' builds left there (a build that misses a change, such as a Makefile without header "
            "dependencies); run again with --clean-ignored, which builds every commit from scratch")


def print_summary(out: Console, rec: BisectRecord, runs: bool = True, brief: bool = False) -> None:
    """The bisection's end-of-run view; `runs=False` leaves out its runs and wall time (triage
    counts them once, for all its steps)."""
    if rec.manual:
        return _manual_summary(out, rec)
    if not rec.ok:
        for line in problem_lines(rec.endpoints):
            out.print(line, markup=False)
        return
    for line in facts_lines(rec):
        if not line.startswith("command:"):     # said before the search started
            out.print(line, markup=False)
    if rec.separable is False:
        out.print(separation_line(rec), markup=False)
        out.print(rates_line(rec) or "", markup=False)
        out.print("most probable first bad commits: "
                  + ", ".join(f"{p['short']} {p['p']:.3f}" for p in rec.posterior), markup=False)
        out.print(f"{rec.observations} observations, {rec.runs} executed; {wall_words(rec)}", markup=False)
        return
    if switched := rec.switched:
        out.print(f"the failure is intermittent ({switched}): the search went on in the flake model", markup=False)
    if rec.interrupted:
        out.print(stopped_line(rec.stop_reason, search_runs_of(rec), rec.search_made), markup=False)
    _answer(out, rec)
    if line := fresh_build_line(rec):
        out.print(line, markup=False)
    for p in rec.last_good:
        out.print(f"{last_words(rec)}: {p['sha']} {p['subject']} [{verdict_words(rec, p.get('verdict', ''))}]",
                  markup=False)
    out.print(failure_line(rec.endpoints, lambda t: verdict_words(rec, t)), markup=False)
    if (slow := slow_line(rec.endpoints, getattr(rec, "subject", None))) is not None:
        out.print(slow, markup=False)
    if line := rates_line(rec):
        out.print(line, markup=False)
    for line in stuck.terminal_lines(rec.hangs, brief):
        out.print(line, markup=False, highlight=False)
    cached = rec.observations - rec.runs
    if not runs:
        out.print(f"{confidence_words(rec)}; {len(rec.skipped)} skipped", markup=False)
        return
    out.print(f"{confidence_words(rec)}; {rec.observations} observations, {rec.runs} executed"
              + (f", {cached} from the ledger ({same_inputs(rec)})" if cached > 0 else "")
              + f"; {len(rec.skipped)} skipped; {wall_words(rec)}", markup=False)


def _answer(out: Console, rec: BisectRecord) -> None:
    fb = rec.first_bad
    if fb:
        # a stopped search is no verdict: its best candidate is said as one
        head = (first_words(rec) if rec.complete else f"{first_words(rec)} by incremental builds, not confirmed"
                if fresh_build_line(rec) else f"{first_words(rec)} so far, not confirmed (the search stopped)")
        out.print(f"{head}: {fb['sha']} {fb['subject']}", markup=False)
        out.print(f"  author {fb['author']}, date {fb['date']}; files: {_files(fb)}", markup=False)
        for step in rec.advice:     # a merge named by --first-parent: the change is inside its branch
            if step.get("step") == "inside_merge":
                out.print(f"  {step_words(step)}", markup=False)
    elif rec.stop_reason == "pathspec":
        out.print(f"no commit that touches {' '.join(rec.paths)} is {rec.terms[-1]}: the change is in another path "
                  "(run again without the pathspec)", markup=False)
    else:
        out.print(f"{first_words(rec)} is one of {len(rec.candidates)} candidates:", markup=False)
        for c in rec.candidates:
            out.print(f"  {c['sha']} {c['subject']} ({c.get('author', '')}; files: {_files(c)})", markup=False)


def _files(commit: dict) -> str:
    """A commit's changed files on one line: a name holding a newline would split it (c_quoted)."""
    return ", ".join(c_quoted(f) for f in commit.get("files") or ()) or "-"


def _manual_summary(out: Console, rec: BisectRecord) -> None:
    """A manual bisection: no endpoints were run; the verdicts were the person's."""
    if not rec.ok:
        for line in next_steps(rec)[:1]:
            out.print(f"problem: {line}", markup=False)
        return
    if rec.interrupted:
        out.print(f"stopped after {rec.observations} verdict(s); the same command resumes", markup=False)
        return
    _answer(out, rec)
    for p in rec.last_good:
        out.print(f"{last_words(rec)}: {p['sha']} {p['subject']} [{p.get('verdict', '')}]", markup=False)
    out.print(f"{rec.observations} verdict(s) of yours"
              + ("; they conflicted, so the search went flake-aware" if rec.flaky else "")
              + f"; {confidence_words(rec)}; {len(rec.skipped)} skipped", markup=False)


def _manual_debuglog(rec: BisectRecord) -> DebugLog:
    fb = rec.first_bad
    status = (f"Resolved -- {first_words(rec)} {_short(fb)}" if fb and rec.complete
              else f"Inconclusive: {next_steps(rec)[0]}" if not rec.ok
              else f"Open -- {len(rec.candidates)} candidate(s) remain")
    log = DebugLog(f"manual bisect {rec.good[:10]}..{rec.bad[:10]}", status,
                   "verdicts given by hand (bisectk bisect --manual)", rec.environment,
                   related=list(fb.get("files") or ()) if fb else [])
    log.summary += facts_lines(rec) + [f"{rec.observations} verdict(s); {confidence_words(rec)}."]
    log.next_steps = next_steps(rec)
    return log
