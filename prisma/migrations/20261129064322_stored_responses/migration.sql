-- CreateTable
CREATE TABLE "StoredResponse" (
    "id" TEXT NOT NULL,
    "memberId" TEXT NOT NULL,
    "model" TEXT NOT NULL,
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "expiresAt" TIMESTAMPTZ(3) NOT NULL,
    "previousResponseId" TEXT,
    "response" JSONB NOT NULL,
    "inputItems" JSONB NOT NULL,

    CONSTRAINT "StoredResponse_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "StoredResponse_memberId_createdAt_idx" ON "StoredResponse"("memberId", "createdAt");

-- CreateIndex
CREATE INDEX "StoredResponse_expiresAt_idx" ON "StoredResponse"("expiresAt");

-- AddForeignKey
ALTER TABLE "StoredResponse" ADD CONSTRAINT "StoredResponse_memberId_fkey" FOREIGN KEY ("memberId") REFERENCES "Member"("id") ON DELETE CASCADE ON UPDATE CASCADE;
