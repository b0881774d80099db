-- AlterTable
ALTER TABLE "Model" ADD COLUMN     "batchPriceFactor" DOUBLE PRECISION NOT NULL DEFAULT 0.5;

-- AlterTable
ALTER TABLE "UsageEvent" ADD COLUMN     "batch" BOOLEAN NOT NULL DEFAULT false;

-- CreateTable
CREATE TABLE "File" (
    "id" TEXT NOT NULL,
    "memberId" TEXT NOT NULL,
    "purpose" TEXT NOT NULL,
    "filename" TEXT NOT NULL,
    "bytes" BIGINT NOT NULL,
    "lines" INTEGER NOT NULL,
    "storageKey" TEXT NOT NULL,
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "expiresAt" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "File_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "Batch" (
    "id" TEXT NOT NULL,
    "memberId" TEXT NOT NULL,
    "keyId" TEXT NOT NULL,
    "subject" JSONB NOT NULL,
    "endpoint" TEXT NOT NULL,
    "inputFileId" TEXT NOT NULL,
    "completionWindow" TEXT NOT NULL,
    "status" TEXT NOT NULL,
    "metadata" JSONB,
    "errors" JSONB,
    "outputFileId" TEXT,
    "errorFileId" TEXT,
    "total" INTEGER NOT NULL DEFAULT 0,
    "completed" INTEGER NOT NULL DEFAULT 0,
    "failed" INTEGER NOT NULL DEFAULT 0,
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "inProgressAt" TIMESTAMPTZ(3),
    "expiresAt" TIMESTAMPTZ(3) NOT NULL,
    "finalizingAt" TIMESTAMPTZ(3),
    "completedAt" TIMESTAMPTZ(3),
    "failedAt" TIMESTAMPTZ(3),
    "expiredAt" TIMESTAMPTZ(3),
    "cancellingAt" TIMESTAMPTZ(3),
    "cancelledAt" TIMESTAMPTZ(3),

    CONSTRAINT "Batch_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "BatchLine" (
    "batchId" TEXT NOT NULL,
    "line" INTEGER NOT NULL,
    "ok" BOOLEAN NOT NULL,
    "output" TEXT NOT NULL,

    CONSTRAINT "BatchLine_pkey" PRIMARY KEY ("batchId","line")
);

-- CreateIndex
CREATE INDEX "File_memberId_createdAt_idx" ON "File"("memberId", "createdAt");

-- CreateIndex
CREATE INDEX "File_expiresAt_idx" ON "File"("expiresAt");

-- CreateIndex
CREATE INDEX "Batch_memberId_createdAt_idx" ON "Batch"("memberId", "createdAt");

-- CreateIndex
CREATE INDEX "Batch_status_idx" ON "Batch"("status");
