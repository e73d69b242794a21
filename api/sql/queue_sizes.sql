-- Dashboard panel "request queues": data-plane RequestQueueSize and control-plane ControlPlaneRequestQueueSize
-- per broker and minute, over the newest hour of rollups (avg and max of the minute).
-- Run: planewatch sql --file api/sql/queue_sizes.sql
SELECT "cluster", broker_id, signal, minute, avg, max
FROM metric_rollups_1m
WHERE signal IN ('RequestQueueSize', 'ControlPlaneRequestQueueSize')
  AND minute >= (SELECT max(minute) FROM metric_rollups_1m) - INTERVAL '1 hour'
ORDER BY minute, "cluster", broker_id, signal
LIMIT 20000
