-- Dashboard panel "idle percents": network-processor and request-handler idle fractions (0-1), data and control
-- plane, per broker and minute over the newest hour of rollups. Low values mean saturated threads.
-- Run: planewatch sql --file api/sql/idle_percents.sql
SELECT "cluster", broker_id, signal, attribute, minute, avg, min
FROM metric_rollups_1m
WHERE signal IN ('NetworkProcessorAvgIdlePercent', 'ControlPlaneNetworkProcessorAvgIdlePercent',
                 'RequestHandlerAvgIdlePercent', 'ControlPlaneRequestHandlerAvgIdlePercent')
  AND minute >= (SELECT max(minute) FROM metric_rollups_1m) - INTERVAL '1 hour'
ORDER BY minute, "cluster", broker_id, signal
LIMIT 20000
