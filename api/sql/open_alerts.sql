-- Dashboard panel "open alerts": every open alert, newest first.
-- Run: planewatch sql --file api/sql/open_alerts.sql
SELECT alert_id, "type", severity, "cluster", broker_id, listener, started_at, last_seen_at, summary, value, threshold
FROM alerts
WHERE status = 'open'
ORDER BY started_at DESC, alert_id DESC
LIMIT 500
