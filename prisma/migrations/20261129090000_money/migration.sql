-- Prices, cost and budgets (docs/adr/0101-money.md): money is integer nano-dollars.

-- AlterTable
ALTER TABLE "Member" ADD COLUMN     "limits" JSONB;

-- AlterTable
ALTER TABLE "Model" ADD COLUMN     "pricing" JSONB NOT NULL DEFAULT '{}';

-- AlterTable (the partitioned parent: every monthly partition gets the column)
ALTER TABLE "UsageEvent" ADD COLUMN     "cost" BIGINT NOT NULL DEFAULT 0;

-- AlterTable
ALTER TABLE "UsageDaily" ADD COLUMN     "cost" BIGINT NOT NULL DEFAULT 0;

-- AlterTable
ALTER TABLE "UsageDailyMember" ADD COLUMN     "cost" BIGINT NOT NULL DEFAULT 0;

-- AlterTable
ALTER TABLE "UsageHourlyModel" ADD COLUMN     "cost" BIGINT NOT NULL DEFAULT 0;

-- AlterTable
ALTER TABLE "UsageMonthlyMember" ADD COLUMN     "cost" BIGINT NOT NULL DEFAULT 0;

-- CreateTable
CREATE TABLE "AlertEvent" (
    "id" BIGSERIAL NOT NULL,
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "scope" TEXT NOT NULL,
    "memberId" TEXT NOT NULL,
    "keyId" TEXT,
    "subjectId" TEXT NOT NULL,
    "limitName" TEXT NOT NULL,
    "unit" TEXT NOT NULL,
    "periodId" TEXT NOT NULL,
    "periodStart" TIMESTAMPTZ(3) NOT NULL,
    "periodEnd" TIMESTAMPTZ(3) NOT NULL,
    "threshold" INTEGER NOT NULL,
    "used" BIGINT NOT NULL,
    "limitValue" BIGINT NOT NULL,
    "status" TEXT NOT NULL DEFAULT 'pending',
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "nextAttemptAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "deliveredAt" TIMESTAMPTZ(3),

    CONSTRAINT "AlertEvent_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "AlertDelivery" (
    "id" BIGSERIAL NOT NULL,
    "alertId" BIGINT NOT NULL,
    "attempt" INTEGER NOT NULL,
    "at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "url" TEXT NOT NULL,
    "status" INTEGER,
    "error" TEXT,
    "durationMs" INTEGER NOT NULL,

    CONSTRAINT "AlertDelivery_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "AlertEvent_subjectId_limitName_periodId_threshold_key" ON "AlertEvent"("subjectId", "limitName", "periodId", "threshold");

-- CreateIndex
CREATE INDEX "AlertEvent_status_nextAttemptAt_idx" ON "AlertEvent"("status", "nextAttemptAt");

-- CreateIndex
CREATE INDEX "AlertEvent_memberId_createdAt_idx" ON "AlertEvent"("memberId", "createdAt");

-- CreateIndex
CREATE INDEX "AlertEvent_createdAt_idx" ON "AlertEvent"("createdAt");

-- CreateIndex
CREATE INDEX "AlertDelivery_alertId_attempt_idx" ON "AlertDelivery"("alertId", "attempt");

-- CreateIndex
CREATE INDEX "AlertDelivery_at_idx" ON "AlertDelivery"("at");

-- AddForeignKey
ALTER TABLE "AlertDelivery" ADD CONSTRAINT "AlertDelivery_alertId_fkey" FOREIGN KEY ("alertId") REFERENCES "AlertEvent"("id") ON DELETE CASCADE ON UPDATE CASCADE;
