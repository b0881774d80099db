-- The console's Logs page finds the requests of a trace (?trace_id=): one index probe per daily
-- partition, as the lookup by request id. Created on the partitioned table, so on every partition.
CREATE INDEX "request_log_trace_id_idx" ON "request_log"("trace_id");
