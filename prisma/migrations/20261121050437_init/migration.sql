-- CreateEnum
CREATE TYPE "Tier" AS ENUM ('community', 'inference', 'premium');

-- CreateEnum
CREATE TYPE "AllowancePeriod" AS ENUM ('month', 'billing_period');

-- CreateTable
CREATE TABLE "Member" (
    "id" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "email" TEXT,
    "tier" "Tier" NOT NULL,
    "billingPeriodAnchor" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "Member_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "ApiKey" (
    "id" TEXT NOT NULL,
    "memberId" TEXT NOT NULL,
    "name" TEXT NOT NULL DEFAULT 'default',
    "prefix" TEXT NOT NULL,
    "hash" TEXT NOT NULL,
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "lastUsedAt" TIMESTAMPTZ(3),
    "revokedAt" TIMESTAMPTZ(3),
    "limits" JSONB,

    CONSTRAINT "ApiKey_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "Model" (
    "id" TEXT NOT NULL,
    "kind" TEXT NOT NULL,
    "rank" INTEGER NOT NULL,
    "ownedBy" TEXT NOT NULL DEFAULT 'infer',
    "created" INTEGER NOT NULL,
    "description" TEXT NOT NULL DEFAULT '',
    "tiers" "Tier"[],
    "contextWindow" INTEGER,
    "allowanceTokens" BIGINT,
    "allowancePeriod" "AllowancePeriod",
    "capabilities" JSONB NOT NULL,
    "engine" JSONB NOT NULL,
    "dimensions" INTEGER,
    "defaultMaxOutputTokens" INTEGER,
    "enabled" BOOLEAN NOT NULL DEFAULT true,
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "Model_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "UsageEvent" (
    "requestId" TEXT NOT NULL,
    "memberId" TEXT NOT NULL,
    "keyId" TEXT NOT NULL,
    "model" TEXT NOT NULL,
    "endpoint" TEXT NOT NULL,
    "promptTokens" INTEGER NOT NULL,
    "completionTokens" INTEGER NOT NULL,
    "totalTokens" INTEGER NOT NULL,
    "status" INTEGER NOT NULL,
    "latencyMs" INTEGER NOT NULL,
    "createdAt" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "UsageEvent_pkey" PRIMARY KEY ("requestId","createdAt")
) PARTITION BY RANGE ("createdAt"); -- hand edit: monthly partitions, see docs/adr/0002-usage-ledger.md

-- CreateIndex
CREATE UNIQUE INDEX "Member_email_key" ON "Member"("email");

-- CreateIndex
CREATE INDEX "Member_tier_idx" ON "Member"("tier");

-- CreateIndex
CREATE UNIQUE INDEX "ApiKey_prefix_key" ON "ApiKey"("prefix");

-- CreateIndex
CREATE UNIQUE INDEX "ApiKey_hash_key" ON "ApiKey"("hash");

-- CreateIndex
CREATE INDEX "ApiKey_memberId_idx" ON "ApiKey"("memberId");

-- CreateIndex
CREATE INDEX "Model_enabled_rank_idx" ON "Model"("enabled", "rank");

-- CreateIndex
CREATE INDEX "UsageEvent_memberId_model_createdAt_idx" ON "UsageEvent"("memberId", "model", "createdAt");

-- CreateIndex
CREATE INDEX "UsageEvent_keyId_createdAt_idx" ON "UsageEvent"("keyId", "createdAt");

-- CreateIndex
CREATE INDEX "UsageEvent_model_createdAt_idx" ON "UsageEvent"("model", "createdAt");

-- AddForeignKey
ALTER TABLE "ApiKey" ADD CONSTRAINT "ApiKey_memberId_fkey" FOREIGN KEY ("memberId") REFERENCES "Member"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- ---------------------------------------------------------------------------------------------
-- Hand-written: partitions of the usage ledger (docs/adr/0002-usage-ledger.md).
-- "UsageEvent" is partitioned by month on "createdAt" (UTC months). Rows whose month has no
-- partition yet land in the DEFAULT partition, so an insert never fails for want of a partition;
-- usage_event_ensure_partition() moves such rows into the month's partition when it creates it.
-- Partitions are created ahead of time by the application (migrateDeploy: this month and the next
-- two; the ledger writer: the months of each batch) or by cron: SELECT usage_event_ensure_partition(now());
-- ---------------------------------------------------------------------------------------------

-- CreatePartition
CREATE TABLE "UsageEvent_default" PARTITION OF "UsageEvent" DEFAULT;

-- CreateFunction
-- Creates (if missing) the partition "UsageEvent_YYYY_MM" for the UTC month holding month_at and
-- returns its name. Idempotent; concurrent callers are serialised by an advisory lock.
CREATE OR REPLACE FUNCTION usage_event_ensure_partition(month_at timestamptz) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
  m_from timestamptz := date_trunc('month', month_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC';
  m_to timestamptz := (date_trunc('month', month_at AT TIME ZONE 'UTC') + interval '1 month') AT TIME ZONE 'UTC';
  part text := 'UsageEvent_' || to_char(date_trunc('month', month_at AT TIME ZONE 'UTC'), 'YYYY_MM');
BEGIN
  IF to_regclass(quote_ident(part)) IS NOT NULL THEN
    RETURN part;
  END IF;
  PERFORM pg_advisory_xact_lock(hashtext('usage_event_ensure_partition'));
  -- Re-check with a fresh catalog read (to_regclass may not see a table another session just
  -- committed: an advisory lock does not refresh the catalog caches).
  IF EXISTS (SELECT 1 FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
              WHERE c.relname = part AND n.nspname = current_schema()) THEN
    RETURN part;
  END IF;
  -- Build the partition as a plain table, move that month's rows out of the default partition,
  -- then attach it (attaching checks the default partition holds no row of the new range).
  EXECUTE format('CREATE TABLE %I (LIKE "UsageEvent" INCLUDING DEFAULTS INCLUDING CONSTRAINTS)', part);
  EXECUTE format(
    'WITH moved AS (DELETE FROM "UsageEvent_default" WHERE "createdAt" >= $1 AND "createdAt" < $2 RETURNING *) '
    'INSERT INTO %I SELECT * FROM moved', part) USING m_from, m_to;
  EXECUTE format('ALTER TABLE "UsageEvent" ATTACH PARTITION %I FOR VALUES FROM (%L) TO (%L)', part, m_from, m_to);
  RETURN part;
END;
$$;
