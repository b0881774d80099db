import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  DocumentJsonSchema,
  headingSlug,
  MAX_BODY_CHARS,
  markdownDocuments,
  markdownToText,
  prepareDocument,
  sourceOfUrl,
  splitMarkdown,
} from './documents.js';

const MD = `# infer-platform

An inference **API** platform. See [docs](docs/).

## Quick start

Run \`bash scripts/setup.sh\`.

\`\`\`sh
## not a heading inside a fence
npm test
\`\`\`

### Details

More text.

## Quick start

Second section with the same heading.

## Empty

`;

describe('Markdown', () => {
  it('splits at ## headings outside code fences, with GitHub anchors', () => {
    const { title, sections } = splitMarkdown(MD);
    assert.equal(title, 'infer-platform');
    assert.deepEqual(
      sections.map((s) => [s.heading, s.anchor]),
      [
        ['', ''],
        ['Quick start', 'quick-start'],
        ['Quick start', 'quick-start-1'],
        ['Empty', 'empty'],
      ],
    );
    assert.match(sections[1]!.markdown, /## not a heading inside a fence/);
    assert.match(sections[1]!.markdown, /### Details/);
  });

  it('makes one document per non-empty section', () => {
    const at = new Date('2025-01-02T03:04:05Z');
    const docs = markdownDocuments(MD, {
      url: 'docs:/README.md',
      fallbackTitle: 'README',
      source: 's',
      fetchedAt: at,
    });
    assert.deepEqual(
      docs.map((d) => [d.url, d.title]),
      [
        ['docs:/README.md', 'infer-platform'],
        ['docs:/README.md#quick-start', 'infer-platform: Quick start'],
        ['docs:/README.md#quick-start-1', 'infer-platform: Quick start'],
      ],
    );
    assert.equal(docs[0]!.body, 'An inference API platform. See docs.');
    assert.match(docs[1]!.body, /Run bash scripts\/setup\.sh\./);
    assert.ok(docs.every((d) => d.source === 's' && d.fetchedAt === at));
  });

  it('turns Markdown markup into plain text', () => {
    assert.equal(
      markdownToText(
        '| a | b |\n| --- | --- |\n| `x` | *y* |\n\n> quoted **bold** [link](http://x)\n<!-- hidden -->\n* item',
      ),
      'a | b\nx | y\n\nquoted bold link\n\n- item',
    );
  });

  it('slugs headings like GitHub', () => {
    assert.equal(headingSlug('Docker Compose'), 'docker-compose');
    assert.equal(headingSlug('POST /v1/search (the `tool`)!'), 'post-v1search-the-tool');
    assert.equal(headingSlug('Ünïcode ok'), 'ünïcode-ok');
  });
});

describe('JSON documents', () => {
  it('needs an absolute url and a body or html', () => {
    assert.equal(DocumentJsonSchema.safeParse({ url: 'https://a.example/x', body: 'b' }).success, true);
    assert.equal(DocumentJsonSchema.safeParse({ url: '/relative', body: 'b' }).success, false);
    const r = DocumentJsonSchema.safeParse({ url: 'https://a.example/x', title: 't' });
    assert.equal(r.success, false);
    assert.deepEqual(r.error?.issues[0]?.path, ['body']);
    assert.equal(
      DocumentJsonSchema.safeParse({ url: 'https://a.example', body: 'b', fetched_at: 'yesterday' }).success,
      false,
    );
  });

  it('drops NUL characters from the text (PostgreSQL cannot store them) and refuses them in a url', async () => {
    const d = await prepareDocument(
      DocumentJsonSchema.parse({
        url: 'https://a.example/n',
        title: 'ti\u0000tle',
        body: 'bo\u0000dy',
        source: 's\u0000',
      }),
    );
    assert.deepEqual([d.title, d.body, d.source], ['title', 'body', 's']);
    const h = await prepareDocument(
      DocumentJsonSchema.parse({
        url: 'https://a.example/h',
        html: '<html><title>T\u0000</title><body><p>x\u0000y</p></body></html>',
      }),
    );
    assert.ok(!h.body.includes('\u0000') && !h.title.includes('\u0000'), JSON.stringify(h));
    assert.equal(DocumentJsonSchema.safeParse({ url: 'https://a.example/\u0000', body: 'b' }).success, false);
  });

  it('prepares HTML documents into readable text with the page title', async () => {
    const d = await prepareDocument(
      DocumentJsonSchema.parse({
        url: 'https://www.zoo.example/llamas',
        html: '<title>Llamas</title><body><p>Llamas hum.</p></body>',
        fetched_at: '2024-05-06',
      }),
    );
    assert.deepEqual(d, {
      url: 'https://www.zoo.example/llamas',
      title: 'Llamas',
      body: 'Llamas hum.',
      source: 'zoo.example',
      fetchedAt: new Date('2024-05-06T00:00:00Z'),
    });
  });

  it('fills defaults and caps the body', async () => {
    const now = new Date('2025-01-01T00:00:00Z');
    const d = await prepareDocument(
      DocumentJsonSchema.parse({ url: 'https://x.example/a', body: 'y'.repeat(MAX_BODY_CHARS + 10) }),
      { source: 'ops', now },
    );
    assert.equal(d.title, 'https://x.example/a');
    assert.equal(d.body.length, MAX_BODY_CHARS);
    assert.equal(d.source, 'ops');
    assert.equal(d.fetchedAt, now);
  });

  it('names the source after the host', () => {
    assert.equal(sourceOfUrl('https://www.example.org/a'), 'example.org');
    assert.equal(sourceOfUrl('docs:/README.md'), 'docs');
  });
});
