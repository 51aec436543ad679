"""What an incomplete search's line says stopped it: never 'interrupted' when nothing interrupted it."""

from types import SimpleNamespace

from bisectk.report.words import stop_reason_of, stopped_line


def rec(stop_reason="", advice=(), interrupted=False):
    return SimpleNamespace(stop_reason=stop_reason, advice=advice, interrupted=interrupted)


def test_the_reason_an_incomplete_search_gives():
    # a confirmation contradicted under the flake rule: incomplete, not interrupted
    unconfirmed = rec(advice=({"step": "stopped", "runs": 56, "reason": "unconfirmed"}, {"step": "intermittent"}))
    assert stopped_line(stop_reason_of(unconfirmed), 65).startswith("search stopped (unconfirmed) after 65")
    assert stop_reason_of(rec(stop_reason="run budget of 20 spent", advice=unconfirmed.advice)) == "run budget of 20 spent"
    assert stop_reason_of(rec(interrupted=True)) == "interrupted"
    assert stop_reason_of(rec()) == "incomplete"


def test_an_incomplete_answer_is_not_called_interrupted_in_the_debug_log_status():
    """The debug log's status line said 'Open (interrupted)' for an ablation or a diff that ended
    unconfirmed with nothing interrupting it, where the terminal said 'unconfirmed'; the record's
    stop_reason (the JSON's) was '' there. Both now come from records.stop_reason_of."""
    from bisectk.engine.records import stop_reason_of as reason
    from bisectk.report.ablation import status_words
    advice = ({"step": "stopped", "runs": 56, "reason": "unconfirmed"},)
    assert reason("", advice, False) == "unconfirmed" and reason("", (), True) == "interrupted"
    ablation = SimpleNamespace(complete=False, stop_reason="", advice=advice, interrupted=False, culprits=("a",),
                               unresolved_factors=(), sets=(), interaction=False)
    assert status_words(ablation).startswith("Open (unconfirmed)"), status_words(ablation)
