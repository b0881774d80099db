-- The request log (docs/adr/0110-request-log.md): one row per request the gateway answered, refusals
-- included. Hand-written: Prisma's schema engine cannot declare a partitioned table, so the table is
-- PARTITION BY RANGE ("time") by hand (like "UsageEvent"); schema.prisma models the same columns and
-- indexes so later diffs leave it alone. Daily partitions "request_log_YYYYMMDD" are created ahead by
-- the ledger writer (and for the days of each batch) and dropped whole after REQUEST_LOG_RETENTION_DAYS.
-- There is no default partition: a row for a day without a partition is an error the writer never
-- causes (it creates the day's partition first, and skips rows already past retention).

-- CreateTable
CREATE TABLE "request_log" (
    "time" TIMESTAMPTZ(3) NOT NULL,
    "request_id" TEXT NOT NULL,
    "member_id" TEXT NOT NULL,
    "key_id" TEXT NOT NULL,
    "model" TEXT,
    "endpoint" TEXT NOT NULL,
    "status" INTEGER NOT NULL,
    "error_code" TEXT,
    "limit_name" TEXT,
    "refused" BOOLEAN NOT NULL DEFAULT false,
    "batch" BOOLEAN NOT NULL DEFAULT false,
    "prompt_tokens" INTEGER NOT NULL,
    "completion_tokens" INTEGER NOT NULL,
    "total_tokens" INTEGER NOT NULL,
    "latency_ms" INTEGER NOT NULL,
    "first_token_ms" INTEGER,
    "trace_id" TEXT,
    "cost" DECIMAL(18,8),
    "engine_endpoint" TEXT,

    CONSTRAINT "request_log_pkey" PRIMARY KEY ("time","request_id")
) PARTITION BY RANGE ("time"); -- hand edit: daily partitions, see docs/adr/0110-request-log.md

-- CreateIndex
CREATE INDEX "request_log_member_id_time_idx" ON "request_log"("member_id", "time");

-- CreateIndex
CREATE INDEX "request_log_key_id_time_idx" ON "request_log"("key_id", "time");

-- CreateIndex
CREATE INDEX "request_log_request_id_idx" ON "request_log"("request_id");
