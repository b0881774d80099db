-- Optional body logging (docs/adr/0110-request-log.md, "Bodies"): an operator switch per member and per
-- model (off by default) and the bodies' own table, with its own, shorter retention (the ledger writer
-- deletes rows older than REQUEST_LOG_BODY_RETENTION_DAYS by "time").

-- AlterTable
ALTER TABLE "Member" ADD COLUMN "logBodies" BOOLEAN NOT NULL DEFAULT false;

-- AlterTable
ALTER TABLE "Model" ADD COLUMN "logBodies" BOOLEAN NOT NULL DEFAULT false;

-- CreateTable
CREATE TABLE "request_log_body" (
    "time" TIMESTAMPTZ(3) NOT NULL,
    "request_id" TEXT NOT NULL,
    "member_id" TEXT NOT NULL,
    "request_body" TEXT,
    "response_body" TEXT,
    "request_truncated" BOOLEAN NOT NULL DEFAULT false,
    "response_truncated" BOOLEAN NOT NULL DEFAULT false,

    CONSTRAINT "request_log_body_pkey" PRIMARY KEY ("request_id","time")
);

-- CreateIndex
CREATE INDEX "request_log_body_time_idx" ON "request_log_body"("time");
