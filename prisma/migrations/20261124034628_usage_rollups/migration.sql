-- CreateTable
CREATE TABLE "UsageDaily" (
    "day" DATE NOT NULL,
    "memberId" TEXT NOT NULL,
    "keyId" TEXT NOT NULL,
    "model" TEXT NOT NULL,
    "requests" INTEGER NOT NULL,
    "errors" INTEGER NOT NULL,
    "promptTokens" BIGINT NOT NULL,
    "completionTokens" BIGINT NOT NULL,
    "totalTokens" BIGINT NOT NULL,

    CONSTRAINT "UsageDaily_pkey" PRIMARY KEY ("day","memberId","keyId","model")
);

-- CreateTable
CREATE TABLE "UsageHourlyModel" (
    "hour" TIMESTAMPTZ(3) NOT NULL,
    "model" TEXT NOT NULL,
    "requests" INTEGER NOT NULL,
    "errors" INTEGER NOT NULL,
    "promptTokens" BIGINT NOT NULL,
    "completionTokens" BIGINT NOT NULL,
    "totalTokens" BIGINT NOT NULL,
    "latencyMsSum" BIGINT NOT NULL,

    CONSTRAINT "UsageHourlyModel_pkey" PRIMARY KEY ("hour","model")
);

-- CreateIndex
CREATE INDEX "UsageDaily_memberId_day_idx" ON "UsageDaily"("memberId", "day");

-- CreateIndex
CREATE INDEX "UsageDaily_keyId_day_idx" ON "UsageDaily"("keyId", "day");

-- Hand-written: the rollups of the rows already in the ledger (later rows are added by
-- UsageRepository.insertBatch in the statement that inserts them).
INSERT INTO "UsageDaily" ("day", "memberId", "keyId", "model", "requests", "errors", "promptTokens",
                          "completionTokens", "totalTokens")
SELECT ("createdAt" AT TIME ZONE 'UTC')::date, "memberId", "keyId", "model", count(*),
       count(*) FILTER (WHERE "status" >= 400), sum("promptTokens"), sum("completionTokens"), sum("totalTokens")
  FROM "UsageEvent"
 GROUP BY 1, 2, 3, 4;
INSERT INTO "UsageHourlyModel" ("hour", "model", "requests", "errors", "promptTokens", "completionTokens",
                                "totalTokens", "latencyMsSum")
SELECT date_trunc('hour', "createdAt", 'UTC'), "model", count(*), count(*) FILTER (WHERE "status" >= 400),
       sum("promptTokens"), sum("completionTokens"), sum("totalTokens"), sum("latencyMs")
  FROM "UsageEvent"
 GROUP BY 1, 2;
