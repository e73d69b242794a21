"""Alert lifecycle, pure logic: one open alert per key, updates, hysteresis, stable ids."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from pipelines.detection.lifecycle import Candidate, alert_id, apply_lifecycle

T0 = datetime(2021, 3, 2, 8, 0, tzinfo=UTC)
NOW = datetime(2026, 1, 1, tzinfo=UTC)
HYST = timedelta(minutes=5)


def cand(sec: float, value: float = 10.0, sev: str = "warning", broker: int = 2, type_: str = "ACCEPTOR_BLOCKED"):
    return Candidate(type_, sev, "c1", broker, "PLAINTEXT", T0 + timedelta(seconds=sec), value, 0.05,
                     f"value {value}", {"value": value})


def test_first_candidate_opens_alert_with_stable_id():
    out = apply_lifecycle([], [cand(0)], None, HYST, NOW)
    assert len(out) == 1
    a = out[0]
    assert a["status"] == "open"
    assert a["started_at"] == T0 == a["last_seen_at"]
    assert a["alert_id"] == alert_id("ACCEPTOR_BLOCKED", "c1", 2, "PLAINTEXT", T0)
    assert apply_lifecycle([], [cand(0)], None, HYST, NOW)[0]["alert_id"] == a["alert_id"]


def test_repeated_firing_updates_one_open_alert():
    opened = apply_lifecycle([], [cand(0)], None, HYST, NOW)
    out = apply_lifecycle(opened, [cand(30, 20, "critical"), cand(60, 15)], T0 + timedelta(seconds=60), HYST, NOW)
    assert len(out) == 1
    a = out[0]
    assert a["alert_id"] == opened[0]["alert_id"]
    assert a["status"] == "open"
    assert a["last_seen_at"] == T0 + timedelta(seconds=60)
    assert a["severity"] == "critical"
    assert a["value"] == 20
    assert json.loads(a["evidence"])["firings"] == 3


def test_flapping_within_hysteresis_keeps_one_alert():
    cands = [cand(s) for s in (0, 200, 400, 600)]  # gaps of 200 s < 300 s
    out = apply_lifecycle([], cands, T0 + timedelta(seconds=600), HYST, NOW)
    assert len(out) == 1
    assert out[0]["status"] == "open"


def test_resolves_after_clear_for_hysteresis():
    opened = apply_lifecycle([], [cand(0)], None, HYST, NOW)
    assert apply_lifecycle(opened, [], T0 + timedelta(seconds=299), HYST, NOW) == []
    out = apply_lifecycle(opened, [], T0 + timedelta(seconds=301), HYST, NOW)
    assert out[0]["status"] == "resolved"
    assert out[0]["resolved_at"] == T0 + HYST


def test_new_incident_after_resolution_gets_new_alert():
    out = apply_lifecycle([], [cand(0), cand(1000)], T0 + timedelta(seconds=1000), HYST, NOW)
    assert [a["status"] for a in out] == ["resolved", "open"]
    assert out[0]["alert_id"] != out[1]["alert_id"]


def test_keys_are_separate_per_broker_and_type():
    out = apply_lifecycle([], [cand(0, broker=1), cand(0, broker=2), cand(0, type_="LOCK_CONTENTION")], None,
                          HYST, NOW)
    assert len(out) == 3
    assert len({a["alert_id"] for a in out}) == 3


def test_an_alert_opened_late_says_so_while_it_lives():
    """A pipeline that was down raises the gap's incident when it catches up, marked found late; one raised live is
    not marked."""
    caught_up = T0 + timedelta(hours=1)
    opened = apply_lifecycle([], [cand(0)], None, HYST, caught_up)
    assert json.loads(opened[0]["evidence"])["found_late_s"] == 3600.0
    updated = apply_lifecycle(opened, [cand(30, 20)], None, HYST, caught_up + timedelta(seconds=30))
    assert json.loads(updated[0]["evidence"])["found_late_s"] == 3600.0
    live = apply_lifecycle([], [cand(0)], None, HYST, T0 + timedelta(seconds=12))
    assert "found_late_s" not in json.loads(live[0]["evidence"])
