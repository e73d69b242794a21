"""pipelines.roll_awareness: which alerts a roll in progress explains (expected, not paged) and which page."""

from __future__ import annotations

import datetime as dt

from pipelines.roll_awareness import (
    LEAD_S,
    MIN_RECOVERY_S,
    RECOVERY_FACTOR,
    ROLL_GAP_S,
    Declared,
    Restart,
    expectation,
    find_rolls,
)
from schemas.alerts import AlertType

T0 = dt.datetime(2026, 12, 6, 10, 0, tzinfo=dt.UTC)


def s(seconds: float) -> dt.datetime:
    return T0 + dt.timedelta(seconds=seconds)


def alert(type_: AlertType, started: float, resolved: float | None = None, cluster: str = "c1") -> dict[str, object]:
    return {"type": type_.value, "cluster": cluster, "broker_id": 2, "started_at": s(started),
            "resolved_at": None if resolved is None else s(resolved)}


# a roll of three brokers, one every 60 s
ROLL = [Restart("c1", 1, s(0)), Restart("c1", 2, s(60)), Restart("c1", 3, s(120))]


def test_stops_closer_than_the_gap_are_one_roll_with_their_median_pace() -> None:
    rolls = find_rolls([*ROLL, Restart("c1", 1, s(120 + ROLL_GAP_S + 1)), Restart("c2", 5, s(30))])
    c1 = sorted((r for r in rolls if r.cluster == "c1"), key=lambda r: r.started)
    assert [(r.nodes, r.pace_s) for r in c1] == [((1, 2, 3), 60.0), ((1,), MIN_RECOVERY_S)]
    assert [r.nodes for r in rolls if r.cluster == "c2"] == [(5,)]


def test_a_symptom_started_in_a_roll_is_expected_while_it_recovers_at_the_rolls_pace() -> None:
    rolls = find_rolls(ROLL)
    got = expectation(alert(AlertType.DELAYED_LEADER_AND_ISR, 65, 90), rolls, s(200))
    assert got is not None
    assert got.expected
    assert got.reason.startswith("rolling restart: roll seen")
    # still open, but younger than the recovery bound (the pace of 60 s gives the floor, MIN_RECOVERY_S)
    assert expectation(alert(AlertType.METADATA_APPLY_LAG, 125), rolls, s(125 + MIN_RECOVERY_S - 1)).expected  # type: ignore[union-attr]
    # a symptom started just before the first stop line belongs to the roll too
    assert expectation(alert(AlertType.DELAYED_STOP_REPLICA, -LEAD_S + 1, 5), rolls, s(10)).expected  # type: ignore[union-attr]


def test_a_symptom_outlasting_the_recovery_bound_pages() -> None:
    rolls = find_rolls(ROLL)
    got = expectation(alert(AlertType.METADATA_APPLY_LAG, 125), rolls, s(125 + MIN_RECOVERY_S + 1))
    assert got is not None
    assert not got.expected
    assert got.reason.startswith("not recovered within 180 s")
    # a slow roll's pace raises the bound: 400 s between restarts -> 800 s
    slow = find_rolls([Restart("c1", 1, s(0)), Restart("c1", 2, s(400))])
    assert slow[0].recovery_s == RECOVERY_FACTOR * 400
    assert expectation(alert(AlertType.METADATA_APPLY_LAG, 410), slow, s(410 + 700)).expected  # type: ignore[union-attr]


def test_what_a_bad_roll_does_pages_during_a_roll() -> None:
    rolls = find_rolls(ROLL)
    for t in (AlertType.ROLL_TOO_FAST, AlertType.UNCLEAN_LEADER_ELECTION, AlertType.LEADER_ELECTED_FROM_ELR,
              AlertType.QUORUM_UNSTABLE, AlertType.CONTROL_PLANE_QUEUE_BACKLOG):
        got = expectation(alert(t, 61, 62), rolls, s(70))
        assert got is not None
        assert not got.expected
        assert "is what a bad roll does" in got.reason


def test_no_roll_no_expectation() -> None:
    rolls = find_rolls(ROLL)
    assert expectation(alert(AlertType.DELAYED_LEADER_AND_ISR, -LEAD_S - 1, 0), rolls, s(10)) is None
    assert expectation(alert(AlertType.DELAYED_LEADER_AND_ISR, 120 + MIN_RECOVERY_S + 5), rolls, s(500)) is None
    assert expectation(alert(AlertType.DELAYED_LEADER_AND_ISR, 65, cluster="c2"), rolls, s(70)) is None


def test_a_declared_roll_covers_its_span_and_takes_its_pace_from_the_stop_lines_within_it() -> None:
    declared = Declared("c1", "r1", s(-100), None)
    rolls = find_rolls(ROLL, [declared])
    assert rolls[0].declared == "r1"
    assert rolls[0].pace_s == 60.0
    assert rolls[0].open_ended
    # open-ended: a symptom long after the last restart is still covered (and judged by its duration)
    got = expectation(alert(AlertType.DELAYED_UPDATE_METADATA, 3000, 3010), rolls, s(3020))
    assert got is not None
    assert got.expected
    assert "declared roll r1" in got.reason
    ended = find_rolls([], [Declared("c1", "r2", s(0), s(100), (s(0), s(50)), (1, 2))])[0]
    assert (ended.pace_s, ended.nodes, ended.covers(s(100 + ended.recovery_s + 1))) == (50.0, (1, 2), False)
