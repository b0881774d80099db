-- AlterTable
ALTER TABLE "SearchDocument" ADD COLUMN     "embedding" BYTEA,
ADD COLUMN     "embeddingModel" TEXT;
