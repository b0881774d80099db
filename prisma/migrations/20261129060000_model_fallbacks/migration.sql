-- AlterTable
ALTER TABLE "Model" ADD COLUMN "fallbacks" TEXT[] DEFAULT ARRAY[]::TEXT[];
