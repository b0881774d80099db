-- AlterTable
ALTER TABLE "ApiKey" ADD COLUMN     "allowedIps" TEXT[] DEFAULT ARRAY[]::TEXT[],
ADD COLUMN     "allowedModels" TEXT[] DEFAULT ARRAY[]::TEXT[],
ADD COLUMN     "expiresAt" TIMESTAMPTZ(3),
ADD COLUMN     "rotatedAt" TIMESTAMPTZ(3);

-- CreateTable
CREATE TABLE "ApiKeySecret" (
    "id" TEXT NOT NULL,
    "keyId" TEXT NOT NULL,
    "hash" TEXT NOT NULL,
    "prefix" TEXT NOT NULL,
    "createdAt" TIMESTAMPTZ(3) NOT NULL,
    "rotatedAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "graceUntil" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "ApiKeySecret_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "ApiKeySecret_hash_key" ON "ApiKeySecret"("hash");

-- CreateIndex
CREATE INDEX "ApiKeySecret_keyId_idx" ON "ApiKeySecret"("keyId");

-- CreateIndex
CREATE INDEX "ApiKey_expiresAt_idx" ON "ApiKey"("expiresAt");

-- AddForeignKey
ALTER TABLE "ApiKeySecret" ADD CONSTRAINT "ApiKeySecret_keyId_fkey" FOREIGN KEY ("keyId") REFERENCES "ApiKey"("id") ON DELETE CASCADE ON UPDATE CASCADE;
