import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { decodeBody, domToText, extractReadableText, tidyText } from './html.js';

const para = (s: string) =>
  `<p>${s} ${'Camelids are even-toed ungulates, and llamas carry loads in the Andes. '.repeat(6)}</p>`;

const ARTICLE = `<!doctype html><html><head><title>Llamas | Zoo</title>
<link rel="canonical" href="https://zoo.example/llamas">
<script>globalThis.__executed = true;</script><style>p{color:red}</style></head>
<body><nav><a href="/">Home</a> | <a href="/about">About us</a></nav>
<header>Site header banner</header>
<article><h1>All about llamas</h1>${para('First.')}${para('Second.')}
<ul><li>wool</li><li>meat</li></ul></article>
<footer>Copyright footer text</footer></body></html>`;

describe('extractReadableText', () => {
  it('keeps the article and drops navigation, header, footer, scripts and styles', async () => {
    const r = await extractReadableText(ARTICLE, 'https://zoo.example/llamas?x=1');
    assert.match(r.text, /First\. Camelids/);
    assert.match(r.text, /Second\. Camelids/);
    assert.match(r.text, /- wool\n- meat/);
    for (const gone of ['About us', 'Site header banner', 'Copyright footer', 'globalThis', 'color:red']) {
      assert.equal(r.text.includes(gone), false, gone);
    }
    assert.match(r.title, /llamas/i);
    assert.equal(r.canonicalUrl, 'https://zoo.example/llamas');
    assert.equal((globalThis as { __executed?: boolean }).__executed, undefined, 'page script did not run');
  });

  it('separates paragraphs with a blank line', async () => {
    const r = await extractReadableText(ARTICLE);
    assert.match(r.text, /Andes\.\n\nSecond\./);
  });

  it('falls back to the body text of a page too short to be an article', async () => {
    const r = await extractReadableText(
      '<html><head><title>Tiny</title></head><body><nav>menu</nav><div>Just one line of text.</div></body></html>',
    );
    assert.equal(r.title, 'Tiny');
    assert.match(r.text, /Just one line of text\./);
    assert.equal(r.text.includes('menu'), false);
  });

  it('survives broken markup and empty input', async () => {
    assert.equal((await extractReadableText('')).text, '');
    const r = await extractReadableText('<div><p>unclosed <b>bold <i>text</div></table>');
    assert.match(r.text, /unclosed bold text/);
  });
});

describe('text helpers', () => {
  it('tidyText trims lines and keeps at most one blank line', () => {
    assert.equal(tidyText('  a  \n\n\n\n b\t\tc \r\n'), 'a\n\nb c');
  });

  it('domToText keeps <pre> line breaks', async () => {
    const { Window } = await import('happy-dom');
    const w = new Window();
    const doc = new w.DOMParser().parseFromString('<pre>line 1\nline 2</pre><p>x</p>', 'text/html');
    assert.equal(domToText(doc.body as never), 'line 1\nline 2\n\nx');
    await w.happyDOM.close();
  });

  it('decodeBody follows the charset of the header or the meta tag', () => {
    const latin1 = Buffer.from([0x63, 0x61, 0x66, 0xe9]); // "café" in ISO-8859-1
    assert.equal(decodeBody(latin1, 'text/html; charset=iso-8859-1'), 'café');
    const meta = Buffer.concat([Buffer.from('<meta charset="windows-1252"><p>'), latin1]);
    assert.match(decodeBody(meta, 'text/html'), /café/);
    assert.equal(decodeBody(Buffer.from('café'), 'text/plain'), 'café');
    assert.equal(decodeBody(Buffer.from('ok'), 'text/html; charset=no-such-charset'), 'ok');
  });
});
