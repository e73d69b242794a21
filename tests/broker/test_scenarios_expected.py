"""broker/scenarios/expected.py is consistent: known runs, alert types and timeline events; none expected is
forbidden."""

from __future__ import annotations

import inspect

from broker.scenarios import library
from broker.scenarios.expected import ANY, EXPECTED, FORBIDDEN, RUNS
from schemas.alerts import AlertType

ALERT_TYPES = set(AlertType)


def test_expected_incidents_name_known_runs_types_and_events() -> None:
    source = inspect.getsource(library)
    for exp in EXPECTED:
        assert exp.run in RUNS
        assert exp.alert_type in ALERT_TYPES
        assert f'"{exp.event}"' in source, f"{exp.event} is not a timeline event of the scenarios"
        assert exp.broker_id is None or isinstance(exp.broker_id, (int, str))


def test_forbidden_types_are_known_and_never_expected() -> None:
    assert set(FORBIDDEN) <= set(RUNS)
    assert FORBIDDEN["healthy"] == (ANY,)
    for run, types in FORBIDDEN.items():
        assert set(types) <= {*ALERT_TYPES, ANY}
        wanted = {e.alert_type for e in EXPECTED if e.run == run}
        assert not wanted & set(types), run
        assert not (wanted and ANY in types), run
