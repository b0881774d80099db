-- AlterTable
ALTER TABLE "Model" ADD COLUMN     "aliases" TEXT[] DEFAULT ARRAY[]::TEXT[];
