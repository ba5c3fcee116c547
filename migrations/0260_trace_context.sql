-- Traces (src/telemetry/, docs/observability.md). A delivery keeps the traceparent of the request that brought it,
-- so the work it causes later, in other processes (its intake, the drain that reads its record, the channel's POST),
-- continues the same trace; NULL when tracing is off. A sync-log entry written in a traced span keeps its trace id,
-- which the console links to TRACE_URL_TEMPLATE.
ALTER TABLE webhook_deliveries ADD COLUMN traceparent text;
ALTER TABLE sync_log ADD COLUMN trace_id text;
