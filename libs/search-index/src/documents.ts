// What goes into the local index: one document = url (its identity), title, plain-text body, source and
// the date its content is from. Operators hand documents in as JSON (admin API, .json/.jsonl files) or
// as files (Markdown split into sections, HTML reduced to its readable main text, plain text).
import { z } from 'zod';
import { extractReadableText, tidyText } from './html.js';

/** Longest body kept (characters): beyond it the text is cut, so a document stays well under
 * PostgreSQL's 1 MB tsvector limit and a `fetch_content` answer stays readable. */
export const MAX_BODY_CHARS = 200_000;
export const MAX_TITLE_CHARS = 500;
export const MAX_URL_CHARS = 2048;
/** Most documents one admin API call or one JSON file may carry. */
export const MAX_DOCUMENTS_PER_BATCH = 5_000;

/** A document ready for the index. */
export interface SearchDocumentInput {
  url: string;
  title: string;
  body: string;
  source: string;
  /** When the content was fetched or last changed (freshness filters on it). */
  fetchedAt: Date;
}

const absoluteUrl = z
  .string()
  .trim()
  .min(1)
  .max(MAX_URL_CHARS)
  .refine((u) => {
    try {
      new URL(u);
      return true;
    } catch {
      return false;
    }
  }, 'must be an absolute URL')
  // PostgreSQL text cannot hold NUL; a URL never needs one (it would be %00).
  .refine((u) => !u.includes('\u0000'), 'must not contain NUL (\\u0000) characters');

/** Text without NUL characters, which PostgreSQL text cannot hold (pages and files may carry them). */
const withoutNul = (s: string) => (s.includes('\u0000') ? s.replaceAll('\u0000', '') : s);

/**
 * A document as the admin API and JSON files take it: `body` (plain text) or `html` (reduced to its
 * readable main text; its <title> fills a missing `title`).
 */
export const DocumentJsonSchema = z
  .object({
    url: absoluteUrl,
    title: z.string().trim().max(MAX_TITLE_CHARS).optional(),
    body: z.string().optional(),
    html: z.string().optional(),
    source: z.string().trim().min(1).max(200).optional(),
    /** ISO 8601 date or date-time of the content; default: now. */
    fetched_at: z.union([z.iso.datetime({ offset: true }), z.iso.date()]).optional(),
  })
  .refine((d) => d.body !== undefined || d.html !== undefined, {
    message: 'needs `body` (plain text) or `html`',
    path: ['body'],
  });
export type DocumentJson = z.infer<typeof DocumentJsonSchema>;

export const DocumentBatchSchema = z.object({
  documents: z.array(DocumentJsonSchema).min(1).max(MAX_DOCUMENTS_PER_BATCH),
});

/** The host of a URL without `www.`, or the scheme for URLs without a host. */
export function sourceOfUrl(url: string): string {
  try {
    const u = new URL(url);
    return u.hostname ? u.hostname.replace(/^www\./, '') : u.protocol.replace(/:$/, '');
  } catch {
    return 'unknown';
  }
}

function cap(s: string, n: number): string {
  return s.length > n ? s.slice(0, n) : s;
}

/** A JSON document -> an index document (HTML reduced to text, defaults filled, lengths capped). */
export async function prepareDocument(
  d: DocumentJson,
  defaults: { source?: string; now?: Date } = {},
): Promise<SearchDocumentInput> {
  let body = withoutNul(d.body ?? '');
  let title = withoutNul(d.title ?? '');
  if (d.body === undefined && d.html !== undefined) {
    const r = await extractReadableText(withoutNul(d.html), d.url.startsWith('http') ? d.url : undefined);
    body = r.text;
    title ||= r.title;
  } else {
    body = tidyText(body);
  }
  return {
    url: d.url,
    title: cap(title.trim() || d.url, MAX_TITLE_CHARS),
    body: cap(body, MAX_BODY_CHARS),
    source: withoutNul(d.source ?? defaults.source ?? sourceOfUrl(d.url)),
    fetchedAt: d.fetched_at ? new Date(d.fetched_at) : (defaults.now ?? new Date()),
  };
}

// ---- Markdown ----

/** GitHub's heading anchor: lower case, punctuation dropped, spaces to dashes. */
export function headingSlug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/<[^>]+>/g, '')
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

/** Markdown -> readable plain text: markup characters, link targets, HTML comments and tags removed. */
export function markdownToText(md: string): string {
  return tidyText(
    md
      .replace(/<!--[\s\S]*?-->/g, '')
      .replace(/^[ \t]*(```|~~~).*$/gm, '')
      .replace(/^#{1,6}[ \t]+/gm, '')
      .replace(/!\[([^\]]*)\]\([^)]*\)/g, '$1')
      .replace(/\[([^\]]+)\]\([^)]*\)/g, '$1')
      .replace(/\[([^\]]+)\]\[[^\]]*\]/g, '$1')
      .replace(/^[ \t]*\|?[ \t]*:?-{3,}:?[ \t]*(\|[ \t]*:?-{3,}:?[ \t]*)*\|?[ \t]*\n/gm, '')
      .replace(/[ \t]*\|[ \t]*/g, ' | ')
      .replace(/^ \| | \| $/gm, '')
      .replace(/(\*\*|__)(.+?)\1/g, '$2')
      .replace(/(^|[\s(])[*_]([^*_\n]+)[*_](?=[\s).,;:!?]|$)/gm, '$1$2')
      .replace(/`([^`]+)`/g, '$1')
      .replace(/<\/?[a-zA-Z][^>]*>/g, '')
      .replace(/^[ \t]*>[ \t]?/gm, '')
      .replace(/^[ \t]*[*+][ \t]+/gm, '- '),
  );
}

export interface MarkdownSection {
  /** '' for the text before the first `##` heading. */
  heading: string;
  anchor: string;
  markdown: string;
}

/**
 * Splits a Markdown document at its `##` headings (outside code fences). Returns the document title
 * (first `#` heading) and the sections; `###` and deeper stay inside their section.
 */
export function splitMarkdown(md: string): { title: string; sections: MarkdownSection[] } {
  const lines = md.replace(/\r\n?/g, '\n').split('\n');
  let title = '';
  let fence: string | null = null;
  const sections: MarkdownSection[] = [{ heading: '', anchor: '', markdown: '' }];
  const used = new Map<string, number>();
  for (const line of lines) {
    const f = /^\s*(```|~~~)/.exec(line)?.[1];
    if (f) fence = fence === null ? f : fence === f ? null : fence;
    if (fence === null && !f) {
      const h1 = /^#\s+(.+?)\s*#*\s*$/.exec(line);
      if (h1 && !title) {
        title = h1[1]!;
        continue;
      }
      const h2 = /^##\s+(.+?)\s*#*\s*$/.exec(line);
      if (h2) {
        const base = headingSlug(h2[1]!);
        const n = used.get(base) ?? 0;
        used.set(base, n + 1);
        sections.push({ heading: h2[1]!, anchor: n ? `${base}-${n}` : base, markdown: '' });
        continue;
      }
    }
    const cur = sections[sections.length - 1]!;
    cur.markdown += `${line}\n`;
  }
  return { title, sections: sections.filter((s) => s.heading || s.markdown.trim()) };
}

/**
 * A Markdown file -> one document per `##` section (url `<url>#<anchor>`, title `<doc title>: <section>`)
 * plus one for the text before the first section. Empty sections are dropped.
 */
export function markdownDocuments(
  md: string,
  opts: { url: string; fallbackTitle: string; source: string; fetchedAt: Date },
): SearchDocumentInput[] {
  const { title, sections } = splitMarkdown(md);
  const docTitle = markdownToText(title) || opts.fallbackTitle;
  const out: SearchDocumentInput[] = [];
  for (const s of sections) {
    const body = markdownToText(s.markdown);
    if (!body) continue;
    const heading = markdownToText(s.heading);
    out.push({
      url: s.anchor ? `${opts.url}#${s.anchor}` : opts.url,
      title: cap(heading ? `${docTitle}: ${heading}` : docTitle, MAX_TITLE_CHARS),
      body: cap(body, MAX_BODY_CHARS),
      source: opts.source,
      fetchedAt: opts.fetchedAt,
    });
  }
  return out;
}
