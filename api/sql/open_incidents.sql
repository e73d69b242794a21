-- Dashboard panel "open incidents": every open incident (one broker's alerts of one time span, one cause), newest
-- first.
-- Run: planewatch sql --file api/sql/open_incidents.sql
SELECT incident_id, "cluster", broker_id, cause, severity, started_at, last_seen_at, alerts, alert_types, summary,
       action
FROM incidents
WHERE status = 'open'
ORDER BY started_at DESC, incident_id DESC
LIMIT 500
