-- Dashboard panel "LeaderAndIsr latency": the newest 2,000 LeaderAndIsr requests, per broker, with the time
-- spent queued (controller send -> broker handling), processing (handling -> finished) and waiting for a lock.
-- Run: planewatch sql --file api/sql/leader_and_isr_latency.sql
SELECT "cluster", broker_id, sent_ts, correlation_id, queue_ms, processing_ms, lock_wait_ms, end_to_end_ms, status
FROM control_request_latency
WHERE request = 'LeaderAndIsr' AND sent_ts IS NOT NULL
ORDER BY sent_ts DESC
LIMIT 2000
