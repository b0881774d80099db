-- CreateTable
CREATE TABLE "UsageWeeklyMember" (
    "week" DATE NOT NULL,
    "memberId" TEXT NOT NULL,
    "requests" INTEGER NOT NULL,
    "totalTokens" BIGINT NOT NULL,

    CONSTRAINT "UsageWeeklyMember_pkey" PRIMARY KEY ("week","memberId")
);

-- CreateIndex
CREATE INDEX "UsageDailyMember_memberId_day_idx" ON "UsageDailyMember"("memberId", "day");

-- Hand-written: backfill from the daily per-member rollup (later rows: UsageRepository.insertBatch).
INSERT INTO "UsageWeeklyMember" ("week", "memberId", "requests", "totalTokens")
SELECT date_trunc('week', "day")::date, "memberId", sum("requests"), sum("totalTokens")
  FROM "UsageDailyMember"
 GROUP BY 1, 2;
