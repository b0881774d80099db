// `admin search ...`: the local web-search index (apps/search-service, engine `local`).
//   search ingest <file-or-dir> [--source S] [--base-url URL]   add or replace documents from files
//   search seed-docs [dir]                                       (re)load the project documentation
//   search stats                                                 documents per source
//   search remove <url> [<url> ...]                              delete documents by url
import { fileURLToPath } from 'node:url';
import type { Db } from '@infer/persistence';
import {
  INGEST_EXTENSIONS,
  loadPath,
  PROJECT_DOCS_SOURCE,
  SearchDocumentsRepository,
  seedProjectDocs,
} from '@infer/search-index';

/** Repository root (this file is apps/admin-cli/{src,dist}/search-commands.*). */
const REPO_ROOT = fileURLToPath(new URL('../../../', import.meta.url));

export const SEARCH_USAGE = `  search ingest <file-or-dir> [--source S] [--base-url URL]
                                                  index documents for the local search engine: Markdown
                                                  (one document per ## section), HTML (readable main
                                                  text), text, JSON/JSONL ({url, title, body|html,
                                                  source, fetched_at}); a directory is read recursively.
                                                  URLs: --base-url + relative path, else file:// URLs
  search seed-docs [dir]                          (re)load the project documentation (README.md,
                                                  docs/**/*.md, apps/*/README.md, libs/*/README.md)
  search stats                                    documents in the local index, per source
  search remove <url> [<url> ...]                 delete documents from the local index`;

/** What the search commands need from the CLI (a subset of cli.ts's context). */
export interface SearchCliContext {
  args: string[];
  values: { source?: string; 'base-url'?: string };
  repos(): { db: Db };
  print(data: unknown, human: () => string): void;
}

type SearchHandler = (ctx: SearchCliContext) => Promise<number>;

/** The handlers, keyed like cli.ts's commands; `usage` makes the CLI's usage error (exit code 2). */
export function searchCommands(usage: (message: string) => Error): Record<string, SearchHandler> {
  const repo = (ctx: SearchCliContext) => new SearchDocumentsRepository(ctx.repos().db);
  return {
    'search ingest': async (ctx) => {
      if (ctx.args.length !== 1)
        throw usage(ctx.args.length ? `unexpected argument: ${ctx.args[1]}` : 'missing <file-or-dir>');
      const baseUrl = ctx.values['base-url'];
      if (baseUrl !== undefined && !URL.canParse(baseUrl)) throw usage(`--base-url is not a URL: ${baseUrl}`);
      const loaded = await loadPath(ctx.args[0]!, {
        ...(baseUrl ? { baseUrl } : {}),
        ...(ctx.values.source ? { source: ctx.values.source } : {}),
      });
      const r = loaded.documents.length
        ? await repo(ctx).upsertMany(loaded.documents)
        : { inserted: 0, updated: 0, unchanged: 0 };
      ctx.print(
        { files: loaded.files.length, skipped: loaded.skipped, documents: loaded.documents.length, ...r },
        () =>
          `indexed ${loaded.documents.length} document(s) from ${loaded.files.length} file(s): ` +
          `${r.inserted} new, ${r.updated} updated, ${r.unchanged} unchanged` +
          (loaded.skipped.length
            ? `\nskipped ${loaded.skipped.length} file(s) (types read: ${INGEST_EXTENSIONS.join(' ')}; at most 20 MB)`
            : ''),
      );
      return 0;
    },

    'search seed-docs': async (ctx) => {
      if (ctx.args.length > 1) throw usage(`unexpected argument: ${ctx.args[1]}`);
      const root = ctx.args[0] ?? REPO_ROOT;
      const r = await seedProjectDocs(repo(ctx), root);
      ctx.print({ root, source: PROJECT_DOCS_SOURCE, ...r }, () =>
        r.documents
          ? `seeded ${r.documents} section(s) of ${r.files} file(s) from ${root}: ${r.inserted} new, ` +
            `${r.updated} updated, ${r.unchanged} unchanged, ${r.deleted} removed`
          : `no documentation found under ${root}`,
      );
      return 0;
    },

    'search stats': async (ctx) => {
      if (ctx.args.length) throw usage(`unexpected argument: ${ctx.args[0]}`);
      const rows = await repo(ctx).stats();
      const total = rows.reduce((n, r) => n + r.documents, 0);
      ctx.print({ documents: total, sources: rows }, () =>
        [
          `${total} document(s) in the local search index`,
          ...rows.map((r) => `  ${r.source}: ${r.documents} (newest ${r.newest?.toISOString() ?? '-'})`),
        ].join('\n'),
      );
      return 0;
    },

    'search remove': async (ctx) => {
      if (!ctx.args.length) throw usage('missing <url>');
      const deleted = await repo(ctx).deleteUrls(ctx.args);
      ctx.print({ deleted }, () => `removed ${deleted} document(s)`);
      return 0;
    },
  };
}
