-- CreateTable
CREATE TABLE "UsageMonthlyMember" (
    "month" DATE NOT NULL,
    "memberId" TEXT NOT NULL,
    "requests" INTEGER NOT NULL,
    "totalTokens" BIGINT NOT NULL,

    CONSTRAINT "UsageMonthlyMember_pkey" PRIMARY KEY ("month","memberId")
);

-- CreateIndex (the counters are in the index: one member's days are read from the index alone)
CREATE INDEX "UsageDailyMember_member_day_cover_idx" ON "UsageDailyMember"("memberId", "day", "totalTokens", "requests", "errors", "promptTokens", "completionTokens");

-- Hand-written: backfill from the daily per-member rollup (later rows: UsageRepository.insertBatch).
INSERT INTO "UsageMonthlyMember" ("month", "memberId", "requests", "totalTokens")
SELECT date_trunc('month', "day")::date, "memberId", sum("requests"), sum("totalTokens")
  FROM "UsageDailyMember"
 GROUP BY 1, 2;
