"""What a process trusts of a user's available balance before it lets a
reservation's write go beside the upstream call (``BalanceMargins`` in
gateway_core/request/reservation.py): writes of one batch report in any order,
and a refusal among them must not leave a figure that predates debits no longer
counted in flight."""

from __future__ import annotations

from gateway_core.request.reservation import MARGIN, BalanceMargins

USER = 7
NEEDED = 100


def test_a_figure_is_trusted_less_what_is_still_being_written():
    margins = BalanceMargins()
    assert not margins.covers(USER, NEEDED)  # nothing seen yet
    started = margins.reserving(USER, NEEDED)
    margins.reserved(USER, NEEDED, (MARGIN + 2) * NEEDED, started)
    assert margins.covers(USER, NEEDED)
    margins.reserving(USER, NEEDED)
    margins.reserving(USER, NEEDED)
    assert margins.covers(USER, NEEDED)  # MARGIN + 2 seen, 2 under way: MARGIN left
    margins.reserving(USER, NEEDED)
    assert not margins.covers(USER, NEEDED)


def test_a_higher_figure_reported_after_a_lower_one_is_not_believed():
    margins = BalanceMargins()
    first, second = margins.reserving(USER, NEEDED), margins.reserving(USER, NEEDED)
    margins.reserved(USER, NEEDED, 20 * NEEDED, second)  # the later write, reported first
    margins.reserved(USER, NEEDED, 21 * NEEDED, first)  # predates the other's debit
    assert margins.covers(USER, 2 * NEEDED) and not margins.covers(USER, 3 * NEEDED)  # 20 seen, not 21


def test_writes_under_way_at_a_refusal_report_nothing():
    """One batch of 20 writes: the last commits last and reports first what is left
    (one reservation); the writes between report higher figures, rightly not
    believed; one is refused; then the first reports the balance as it was before
    the other 19 debits, none of them counted in flight any more. Believing it would
    let reservations overlap their upstream calls against money that is gone."""
    margins = BalanceMargins()
    started = [margins.reserving(USER, NEEDED) for _ in range(20)]
    margins.reserved(USER, NEEDED, 1 * NEEDED, started[19])
    for n in range(1, 18):
        margins.reserved(USER, NEEDED, (20 - n) * NEEDED, started[n])
    assert not margins.covers(USER, NEEDED)
    margins.reserved(USER, NEEDED, None, started[18])  # refused: the balance ran out
    margins.reserved(USER, NEEDED, 20 * NEEDED, started[0])  # the batch's first: before every debit
    assert not margins.covers(USER, NEEDED)
    # a write started after the refusal reports a figure that counts every debit before it
    later = margins.reserving(USER, NEEDED)
    margins.reserved(USER, NEEDED, 30 * NEEDED, later)  # a top-up came in meanwhile
    assert margins.covers(USER, NEEDED)


def test_a_write_of_another_user_is_not_affected_by_a_refusal():
    margins = BalanceMargins()
    other = margins.reserving(USER + 1, NEEDED)
    margins.reserved(USER, NEEDED, None, margins.reserving(USER, NEEDED))
    margins.reserved(USER + 1, NEEDED, 20 * NEEDED, other)
    assert margins.covers(USER + 1, NEEDED) and not margins.covers(USER, NEEDED)
