-- AlterTable
ALTER TABLE "Operator" ADD COLUMN "oidcSubject" TEXT;

-- CreateIndex
CREATE UNIQUE INDEX "Operator_oidcSubject_key" ON "Operator"("oidcSubject");
