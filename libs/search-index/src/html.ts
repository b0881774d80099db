// The readable main text of an HTML page: Mozilla's Readability (the Firefox Reader View algorithm) on a
// DOM built by happy-dom, then turned into plain text with paragraph breaks.
//
// Why happy-dom: Readability needs a DOM and Node has none. Chosen when Node 20 left no other (linkedom
// cannot be installed here, jsdom 27+ needs Node >= 22), and kept on Node 26 on its merits: after
// warm-up jsdom is no faster at Readability's work, so switching buys nothing. It is configured as a parser only: no JavaScript, no CSS or script files,
// no frames, no navigation, so a page can neither run code nor make the process fetch anything.
//
// Both are loaded on first use (hundreds of modules): every app that imports @infer/search-index (the
// gateway for its admin routes) would otherwise hold them in memory without ever reading a page.
import type { Window } from 'happy-dom';

type Dom = {
  Window: typeof import('happy-dom').Window;
  Readability: typeof import('@mozilla/readability').Readability;
};
let dom: Promise<Dom> | null = null;
const loadDom = (): Promise<Dom> =>
  (dom ??= Promise.all([import('happy-dom'), import('@mozilla/readability')]).then(([h, r]) => ({
    Window: h.Window,
    Readability: r.Readability,
  })));

export interface ReadableText {
  /** The page title (Readability's, else <title>), '' when there is none. */
  title: string;
  /** Plain text: paragraphs separated by a blank line, list items prefixed with '- '. */
  text: string;
  /** `<link rel="canonical">` when it is an absolute http(s) URL. */
  canonicalUrl?: string;
}

const BLOCK = new Set([
  'ADDRESS',
  'ARTICLE',
  'ASIDE',
  'BLOCKQUOTE',
  'DIV',
  'DL',
  'FIELDSET',
  'FIGCAPTION',
  'FIGURE',
  'FOOTER',
  'FORM',
  'H1',
  'H2',
  'H3',
  'H4',
  'H5',
  'H6',
  'HEADER',
  'HR',
  'MAIN',
  'NAV',
  'OL',
  'P',
  'PRE',
  'SECTION',
  'TABLE',
  'UL',
]);
const MIN_ARTICLE_CHARS = 200;
const LINE = new Set(['LI', 'DT', 'DD', 'TR']);
const SKIP = new Set([
  'SCRIPT',
  'STYLE',
  'NOSCRIPT',
  'TEMPLATE',
  'SVG',
  'CANVAS',
  'IFRAME',
  'OBJECT',
  'HEAD',
  'TITLE',
]);

function newWindow(Win: Dom['Window'], url: string): Window {
  return new Win({
    url,
    settings: {
      disableJavaScriptEvaluation: true,
      disableJavaScriptFileLoading: true,
      disableCSSFileLoading: true,
      disableIframePageLoading: true,
      disableComputedStyleRendering: true,
      handleDisabledFileLoadingAsSuccess: true,
      navigation: {
        disableMainFrameNavigation: true,
        disableChildFrameNavigation: true,
        disableChildPageNavigation: true,
        disableFallbackToSetURL: true,
      },
    },
  });
}

interface NodeLike {
  nodeType: number;
  nodeName: string;
  textContent: string | null;
  childNodes: ArrayLike<NodeLike>;
}

/** Plain text of a DOM subtree: block elements become line breaks, whitespace is collapsed outside <pre>. */
export function domToText(root: NodeLike): string {
  const out: string[] = [];
  // A break is only written before the next visible text, as the larger of the breaks asked for
  // since (1: line, 2: blank line): whitespace between list items or table cells adds nothing.
  let pending = 0;
  const text = (t: string) => {
    if (pending) {
      if (!t.trim()) return;
      if (out.length) out.push(pending === 2 ? '\n\n' : '\n');
      pending = 0;
      t = t.replace(/^\s+/, '');
    }
    out.push(t);
  };
  const walk = (node: NodeLike, pre: boolean) => {
    if (node.nodeType === 3) {
      const t = node.textContent ?? '';
      text(pre ? t : t.replace(/\s+/g, ' '));
      return;
    }
    if (node.nodeType !== 1 && node.nodeType !== 9 && node.nodeType !== 11) return;
    const name = node.nodeName.toUpperCase();
    if (SKIP.has(name)) return;
    if (name === 'BR') {
      pending = Math.max(pending, 1);
      return;
    }
    // Paragraph-like blocks are set apart by a blank line; list items and table rows by a line break.
    const brk = LINE.has(name) ? 1 : BLOCK.has(name) ? 2 : 0;
    pending = Math.max(pending, brk);
    if (name === 'LI') text('- ');
    if (name === 'TD' || name === 'TH') text(' ');
    const inPre = pre || name === 'PRE';
    for (let i = 0; i < node.childNodes.length; i++) walk(node.childNodes[i] as NodeLike, inPre);
    pending = Math.max(pending, brk);
  };
  walk(root, false);
  return tidyText(out.join(''));
}

/** Trims each line and keeps at most one blank line between paragraphs. */
export function tidyText(s: string): string {
  return s
    .replace(/\r\n?/g, '\n')
    .split('\n')
    .map((l) => l.replace(/[ \t\u00a0]+/g, ' ').trim())
    .join('\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
}

/**
 * Extracts the readable main text of an HTML document. Falls back to the text of <body> (without
 * scripts, styles and navigation) when Readability finds no article. Never throws on bad markup.
 */
export async function extractReadableText(html: string, url = 'https://localhost/'): Promise<ReadableText> {
  const { Window: Win, Readability } = await loadDom();
  const window = newWindow(Win, url);
  try {
    const parser = new window.DOMParser();
    const doc = parser.parseFromString(html, 'text/html');
    const docTitle = (doc.title ?? '').trim();
    const canonicalHref = doc.querySelector('link[rel="canonical"]')?.getAttribute('href') ?? '';
    let canonicalUrl: string | undefined;
    try {
      const c = new URL(canonicalHref, url);
      if (canonicalHref && (c.protocol === 'http:' || c.protocol === 'https:')) canonicalUrl = c.toString();
    } catch {
      // not a URL: ignored
    }
    // Readability changes the document it reads: give it a copy, keep the original for the fallback.
    const article = new Readability(doc.cloneNode(true) as never, {
      charThreshold: MIN_ARTICLE_CHARS,
    }).parse();
    let text = '';
    if (article?.content) {
      const content = parser.parseFromString(`<body>${article.content}</body>`, 'text/html');
      text = domToText(content.body as unknown as NodeLike);
    }
    // Below Readability's own threshold its choice is a guess (it may keep the menu): use the page body.
    if (text.length < MIN_ARTICLE_CHARS) {
      for (const el of doc.querySelectorAll('nav, header, footer, aside, form')) el.remove();
      text = doc.body ? domToText(doc.body as unknown as NodeLike) : '';
    }
    const title = (article?.title ?? '').trim() || docTitle;
    return canonicalUrl ? { title, text, canonicalUrl } : { title, text };
  } finally {
    await window.happyDOM.close();
  }
}

/** Decodes an HTML or text body by the charset of its Content-Type or <meta charset>, UTF-8 otherwise. */
export function decodeBody(body: Uint8Array, contentType = ''): string {
  let charset = /charset\s*=\s*"?([\w.:-]+)/i.exec(contentType)?.[1];
  if (!charset && /html/i.test(contentType || 'html')) {
    const head = new TextDecoder('latin1').decode(body.subarray(0, 2048));
    charset =
      /<meta[^>]+charset\s*=\s*["']?([\w.:-]+)/i.exec(head)?.[1] ??
      /<meta[^>]+content\s*=\s*["'][^"']*charset=([\w.:-]+)/i.exec(head)?.[1];
  }
  try {
    return new TextDecoder(charset ?? 'utf-8').decode(body);
  } catch {
    return new TextDecoder('utf-8').decode(body);
  }
}
