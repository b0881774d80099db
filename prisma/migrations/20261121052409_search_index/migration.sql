-- CreateTable
CREATE TABLE "SearchDocument" (
    "id" TEXT NOT NULL,
    "url" TEXT NOT NULL,
    "title" TEXT NOT NULL,
    "body" TEXT NOT NULL,
    "source" TEXT NOT NULL,
    "fetchedAt" TIMESTAMPTZ(3) NOT NULL,
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMPTZ(3) NOT NULL,
    -- Hand-written: a STORED generated column (Prisma models it as Unsupported("tsvector")). Title
    -- lexemes weigh more (A) than body lexemes (B) in ts_rank_cd. Bodies are capped at ingestion so
    -- the vector stays under PostgreSQL's 1 MB tsvector limit.
    "searchVector" tsvector GENERATED ALWAYS AS (
        setweight(to_tsvector('english'::regconfig, "title"), 'A') ||
        setweight(to_tsvector('english'::regconfig, "body"), 'B')
    ) STORED,

    CONSTRAINT "SearchDocument_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "SearchDocument_url_key" ON "SearchDocument"("url");

-- CreateIndex (GIN over the generated tsvector: websearch_to_tsquery matches use it)
CREATE INDEX "SearchDocument_searchVector_idx" ON "SearchDocument" USING GIN ("searchVector");

-- CreateIndex
CREATE INDEX "SearchDocument_fetchedAt_idx" ON "SearchDocument"("fetchedAt");

-- CreateIndex
CREATE INDEX "SearchDocument_source_idx" ON "SearchDocument"("source");
