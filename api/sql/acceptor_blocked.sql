-- Dashboard panel "acceptor blocked": AcceptorBlockedPercent (KIP-402) per broker and listener and minute over
-- the newest hour of rollups. High values: a connection storm or backpressure on the processors.
-- Run: planewatch sql --file api/sql/acceptor_blocked.sql
SELECT "cluster", broker_id, signal, listener, attribute, minute, avg, max
FROM metric_rollups_1m
WHERE signal IN ('AcceptorBlockedPercent', 'ControlPlaneAcceptorBlockedPercent')
  AND minute >= (SELECT max(minute) FROM metric_rollups_1m) - INTERVAL '1 hour'
ORDER BY minute, "cluster", broker_id, listener
LIMIT 20000
