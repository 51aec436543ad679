"""Runs begun before their watchdog is known (run/pending.py): the deadline they get once the good
endpoint has passed, and the end of those made ahead when it did not."""
import threading
import time

import pytest

from bisectk.run.pending import Pending, PendingWatch, RunAbandoned
from bisectk.run.progress import FixedWatch, ProgressWatch, Timeline
from bisectk.run.watchdog import wait_run

GOOD = Timeline((("phase:start", 0.0), ("phase:compile", 0.1), ("phase:launch", 1.0),
                 ("phase:synchronized", 1.05)), 1.1)


def progress() -> ProgressWatch:
    return ProgressWatch(GOOD, 5.5, floor_s=1.0)


def test_a_pending_run_keeps_the_watchdog_it_began_under_until_settled():
    w = PendingWatch(Pending(owner=-1), 120.0)
    w.feed("BISECTK_PHASE launch", 2.0)
    assert w.deadline() == 120.0 and w.where(3.0) == ""


def test_once_settled_the_deadline_follows_the_lines_the_run_printed_before():
    """The watch made at settlement hears the run's earlier lines at their own times: a run that
    reached `launch` 2.0 s in is due about a second past the good run's finish point from there,
    the same deadline as a watch that heard them live."""
    pending = Pending(owner=-1)
    w = PendingWatch(pending, 120.0)
    live = progress()
    for text, t in (("BISECTK_PHASE start", 0.0), ("BISECTK_PHASE compile", 0.2), ("BISECTK_PHASE launch", 2.0),
                    ("waiting 1", 2.1), ("waiting 2", 2.2)):
        w.feed(text, t)
        live.feed(text, t)
    pending.settle(progress)
    assert w.deadline() == pytest.approx(live.deadline()) and w.deadline() < 5.0
    assert "hung after 'launch'" in w.where(4.0)
    assert [k for k, _ in w.timeline(4.0).points] == [k for k, _ in live.timeline(4.0).points]
    w.feed("BISECTK_PHASE synchronized", 2.3)        # lines after settlement reach the new watch
    live.feed("BISECTK_PHASE synchronized", 2.3)
    assert w.deadline() == pytest.approx(live.deadline())


def test_a_run_already_past_its_new_deadline_is_a_hang_at_once():
    pending = Pending(owner=-1)
    w = PendingWatch(pending, 120.0)
    t0 = time.monotonic() - 3.0        # begun 3 s ago, beside a good run that took 1 s
    threading.Timer(0.2, pending.settle, args=(lambda: FixedWatch(2.0),)).start()
    hung = wait_run(lambda s: time.sleep(s) or False, w, t0, pid=0)
    assert hung is not None and 3.0 <= hung.at_s < 10.0


def test_abandoned_runs_made_ahead_end_and_a_kept_one_goes_on():
    pending = Pending(owner=-1)
    box = {}

    def kept() -> None:
        pending.keep_here()
        box["kept"] = PendingWatch(pending, 120.0, kept=pending.kept())
    t = threading.Thread(target=kept)
    t.start()
    t.join()
    ahead = PendingWatch(pending, 120.0, kept=pending.kept())     # this thread was never marked
    pending.abandon(lambda: FixedWatch(7.0))
    with pytest.raises(RunAbandoned):
        ahead.deadline()
    assert box["kept"].deadline() == 7.0


def test_the_runner_holds_runs_of_other_threads_only(toy_spec_path):
    """Runner.hold: the thread that holds (the good endpoint's) gets its usual watch and the first
    worker free; another thread's run gets a PendingWatch until `settle`, and a plain watch after;
    a kept one (the bad endpoint's) the next worker free."""
    from bisectk.run.runner import Runner
    from bisectk.spec import load_spec
    runner = Runner(load_spec(toy_spec_path))
    pending = runner.hold()
    assert isinstance(runner.watch(3.0), FixedWatch) and runner._urgency() == 2
    other = {}

    def kept() -> None:
        pending.keep_here()
        other["kept"] = runner._urgency(), runner.watch(3.0)
    for target in (lambda: other.setdefault("w", runner.watch(3.0)), kept,
                   lambda: other.setdefault("ahead", runner._urgency())):
        t = threading.Thread(target=target)
        t.start()
        t.join()
    assert isinstance(other["w"], PendingWatch) and not other["w"].kept
    assert other["kept"][0] == 1 and other["kept"][1].kept and other["ahead"] == 0
    runner.settle(True)
    t = threading.Thread(target=lambda: other.__setitem__("w", runner.watch(3.0)))
    t.start()
    t.join()
    assert isinstance(other["w"], FixedWatch)


@pytest.fixture
def toy_spec_path(tmp_path):
    (tmp_path / "pyproject.toml").touch()
    spec = tmp_path / "s.toml"
    spec.write_text('[subject]\ncommand = ["python", "-c", "pass", "{a}"]\n[good]\na = 0\n[bad]\na = 1\n')
    return spec
