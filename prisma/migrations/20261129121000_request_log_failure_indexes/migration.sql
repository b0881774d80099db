-- The request log's failure filters at 50 M rows (docs/performance.md, "Request log at 50 M rows"): a
-- status class, a status or an error code, alone or with a member, and "why refused". Without these
-- the newest-first scan of (time) or (member_id, time) reads every row of a busy member or day to find
-- the few failures (3-7 % of the traffic), past 200 ms. Partial indexes over the failures only (status
-- >= 400: every refusal and failure, and every row with an error code; RequestLogRepository.list adds
-- that condition to the status and code filters as a literal so that the planner can prove it), with
-- status and error code as index columns: checked in the index, no heap fetch per skipped row.
-- Hand-written: schema.prisma cannot declare a partial index (a generated diff would drop these; edit
-- it by hand as the partitioned tables are). On a partitioned table each index is made per partition,
-- and every partition created later (the ledger writer's daily ones) gets them too.

-- CreateIndex
CREATE INDEX IF NOT EXISTS "request_log_failures_time_idx" ON "request_log"("time", "status", "error_code")
  WHERE "status" >= 400;

-- CreateIndex
CREATE INDEX IF NOT EXISTS "request_log_failures_member_idx" ON "request_log"("member_id", "time", "status", "error_code")
  WHERE "status" >= 400;

-- CreateIndex: why a member is refused (RequestLogRepository.refusals): its refusals of the last day.
CREATE INDEX IF NOT EXISTS "request_log_refusals_idx" ON "request_log"("member_id", "time")
  WHERE "limit_name" IS NOT NULL;
