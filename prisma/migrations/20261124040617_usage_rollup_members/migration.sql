-- CreateTable
CREATE TABLE "UsageDailyMember" (
    "day" DATE NOT NULL,
    "memberId" TEXT NOT NULL,
    "requests" INTEGER NOT NULL,
    "errors" INTEGER NOT NULL,
    "promptTokens" BIGINT NOT NULL,
    "completionTokens" BIGINT NOT NULL,
    "totalTokens" BIGINT NOT NULL,

    CONSTRAINT "UsageDailyMember_pkey" PRIMARY KEY ("day","memberId")
);

-- Hand-written: backfill from the ledger (later rows: UsageRepository.insertBatch).
INSERT INTO "UsageDailyMember" ("day", "memberId", "requests", "errors", "promptTokens", "completionTokens",
                                "totalTokens")
SELECT ("createdAt" AT TIME ZONE 'UTC')::date, "memberId", count(*), count(*) FILTER (WHERE "status" >= 400),
       sum("promptTokens"), sum("completionTokens"), sum("totalTokens")
  FROM "UsageEvent"
 GROUP BY 1, 2;
