// Files -> index documents, for `admin search ingest <file-or-dir>` and the project-docs seed.
import { existsSync } from 'node:fs';
import { readdir, readFile, stat } from 'node:fs/promises';
import { basename, extname, join, relative, resolve, sep } from 'node:path';
import { pathToFileURL } from 'node:url';
import {
  DocumentJsonSchema,
  MAX_BODY_CHARS,
  MAX_DOCUMENTS_PER_BATCH,
  MAX_TITLE_CHARS,
  markdownDocuments,
  prepareDocument,
  type SearchDocumentInput,
} from './documents.js';
import { decodeBody, extractReadableText, tidyText } from './html.js';

/** File types `search ingest` reads; other files in a directory are skipped. */
export const INGEST_EXTENSIONS = ['.md', '.markdown', '.txt', '.html', '.htm', '.json', '.jsonl'] as const;
/** Largest file read (bytes). */
export const MAX_FILE_BYTES = 20 * 1024 * 1024;

/** The source of the seeded project documentation, and the URL base of its documents. */
export const PROJECT_DOCS_SOURCE = 'project-docs';
export const PROJECT_DOCS_BASE_URL = 'docs:/';

export interface IngestFileOptions {
  /**
   * Base URL of the documents: a file's URL is this base + its path relative to the ingested
   * directory (or its name for a single file). Default: the file's own file:// URL.
   */
  baseUrl?: string;
  /** `source` of the documents (JSON documents may name their own); default: the URL's host, or 'file'. */
  source?: string;
}

export class IngestFileError extends Error {
  constructor(
    readonly file: string,
    message: string,
  ) {
    super(`${file}: ${message}`);
    this.name = 'IngestFileError';
  }
}

export interface LoadedFiles {
  documents: SearchDocumentInput[];
  files: string[];
  /** Files of a directory that were not read (unknown type, too large). */
  skipped: string[];
}

async function walk(dir: string, out: string[]): Promise<void> {
  for (const e of await readdir(dir, { withFileTypes: true })) {
    if (e.name.startsWith('.') || e.name === 'node_modules' || e.name === 'dist') continue;
    const p = join(dir, e.name);
    if (e.isDirectory()) await walk(p, out);
    else if (e.isFile()) out.push(p);
  }
}

function fileUrl(file: string, root: string, opts: IngestFileOptions): string {
  if (!opts.baseUrl) return pathToFileURL(file).toString();
  const rel = relative(root, file).split(sep).map(encodeURIComponent).join('/') || basename(file);
  return new URL(rel, opts.baseUrl.endsWith('/') ? opts.baseUrl : `${opts.baseUrl}/`).toString();
}

/** Reads one file into documents (by extension). */
export async function loadFile(
  file: string,
  opts: IngestFileOptions & { root?: string } = {},
): Promise<SearchDocumentInput[]> {
  const ext = extname(file).toLowerCase();
  const st = await stat(file);
  if (st.size > MAX_FILE_BYTES) throw new IngestFileError(file, `larger than ${MAX_FILE_BYTES} bytes`);
  const raw = await readFile(file);
  const root = opts.root ?? resolve(file, '..');
  const url = fileUrl(file, root, opts);
  const fetchedAt = st.mtime;
  const fallbackTitle = basename(file, extname(file));
  const source = opts.source ?? (opts.baseUrl ? new URL(url).hostname || 'file' : 'file');
  switch (ext) {
    case '.md':
    case '.markdown':
      return markdownDocuments(raw.toString('utf8'), { url, fallbackTitle, source, fetchedAt });
    case '.txt': {
      const body = tidyText(raw.toString('utf8'));
      if (!body) return [];
      const firstLine = body.split('\n', 1)[0] ?? '';
      const title = firstLine.length <= 120 ? firstLine : fallbackTitle;
      return [{ url, title, body: body.slice(0, MAX_BODY_CHARS), source, fetchedAt }];
    }
    case '.html':
    case '.htm': {
      const r = await extractReadableText(
        decodeBody(raw, 'text/html'),
        url.startsWith('http') ? url : undefined,
      );
      if (!r.text) return [];
      const docUrl = r.canonicalUrl ?? url;
      return [
        {
          url: docUrl,
          title: (r.title || fallbackTitle).slice(0, MAX_TITLE_CHARS),
          body: r.text.slice(0, MAX_BODY_CHARS),
          source: opts.source ?? (r.canonicalUrl ? new URL(docUrl).hostname.replace(/^www\./, '') : source),
          fetchedAt,
        },
      ];
    }
    case '.json':
    case '.jsonl':
      return jsonDocuments(file, raw.toString('utf8'), ext === '.jsonl', opts.source, fetchedAt);
    default:
      throw new IngestFileError(file, `unsupported file type (use ${INGEST_EXTENSIONS.join(', ')})`);
  }
}

async function jsonDocuments(
  file: string,
  text: string,
  lines: boolean,
  source: string | undefined,
  now: Date,
): Promise<SearchDocumentInput[]> {
  let items: unknown[];
  try {
    if (lines) {
      items = text
        .split('\n')
        .map((l) => l.trim())
        .filter(Boolean)
        .map((l) => JSON.parse(l));
    } else {
      const parsed = JSON.parse(text) as unknown;
      items = Array.isArray(parsed)
        ? parsed
        : Array.isArray((parsed as { documents?: unknown })?.documents)
          ? (parsed as { documents: unknown[] }).documents
          : [parsed];
    }
  } catch (e) {
    throw new IngestFileError(file, `not valid JSON (${(e as Error).message})`);
  }
  if (items.length > MAX_DOCUMENTS_PER_BATCH) {
    throw new IngestFileError(file, `more than ${MAX_DOCUMENTS_PER_BATCH} documents: split the file`);
  }
  const out: SearchDocumentInput[] = [];
  for (const [i, item] of items.entries()) {
    const r = DocumentJsonSchema.safeParse(item);
    if (!r.success) {
      const issue = r.error.issues[0];
      const where = issue?.path.length ? `.${issue.path.join('.')}` : '';
      throw new IngestFileError(file, `document ${i}${where}: ${issue?.message ?? 'invalid'}`);
    }
    out.push(await prepareDocument(r.data, { ...(source ? { source } : {}), now }));
  }
  return out;
}

/**
 * A file or a directory (recursively; hidden entries, node_modules and dist skipped) -> documents.
 * A single file of an unknown type is an error; in a directory it is listed in `skipped`.
 */
export async function loadPath(path: string, opts: IngestFileOptions = {}): Promise<LoadedFiles> {
  const abs = resolve(path);
  if (!existsSync(abs)) throw new IngestFileError(path, 'no such file or directory');
  const st = await stat(abs);
  if (st.isFile()) {
    return {
      documents: await loadFile(abs, { ...opts, root: resolve(abs, '..') }),
      files: [abs],
      skipped: [],
    };
  }
  const all: string[] = [];
  await walk(abs, all);
  all.sort();
  const documents: SearchDocumentInput[] = [];
  const files: string[] = [];
  const skipped: string[] = [];
  for (const f of all) {
    const ext = extname(f).toLowerCase();
    if (!(INGEST_EXTENSIONS as readonly string[]).includes(ext) || (await stat(f)).size > MAX_FILE_BYTES) {
      skipped.push(f);
      continue;
    }
    documents.push(...(await loadFile(f, { ...opts, root: abs })));
    files.push(f);
  }
  return { documents, files, skipped };
}

/** The project's own documentation: README.md, docs/**\/*.md, apps/*\/README.md, libs/*\/README.md. */
export async function projectDocFiles(root: string): Promise<string[]> {
  const files: string[] = [];
  const add = (p: string) => {
    if (existsSync(p)) files.push(p);
  };
  add(join(root, 'README.md'));
  const docs = join(root, 'docs');
  if (existsSync(docs)) {
    const all: string[] = [];
    await walk(docs, all);
    files.push(...all.filter((f) => f.endsWith('.md')).sort());
  }
  for (const group of ['apps', 'libs']) {
    const dir = join(root, group);
    if (!existsSync(dir)) continue;
    for (const e of (await readdir(dir, { withFileTypes: true })).sort((a, b) =>
      a.name.localeCompare(b.name),
    )) {
      if (e.isDirectory()) add(join(dir, e.name, 'README.md'));
    }
  }
  return files;
}

/** The project documentation as documents (`docs:/<path>#<section>`, source `project-docs`). */
export async function projectDocuments(root: string): Promise<SearchDocumentInput[]> {
  const out: SearchDocumentInput[] = [];
  for (const f of await projectDocFiles(root)) {
    out.push(...(await loadFile(f, { root, baseUrl: PROJECT_DOCS_BASE_URL, source: PROJECT_DOCS_SOURCE })));
  }
  return out;
}
