import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FrameCapture, loggedBody, REDACTED, redactSecrets, requestBodies } from './body-log.js';

const OUR_KEY = `sk-inf-${'a1B2c3D4e5'.repeat(4)}`;

describe('body log: redaction', () => {
  it('replaces our keys, OpenAI-style keys and bearer tokens anywhere in the text', () => {
    const text = `use ${OUR_KEY} or sk-proj-AbCdEf123456_xyz, header Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.abc.def`;
    const out = redactSecrets(text);
    assert.ok(!out.includes(OUR_KEY), out);
    assert.ok(!out.includes('AbCdEf123456'), out);
    assert.ok(!out.includes('eyJhbGciOiJIUzI1NiJ9'), out);
    assert.match(out, /Bearer \[redacted\]/);
    assert.equal(out.match(/sk-\[redacted\]/g)?.length, 2);
  });

  it('replaces the string values of fields named like secrets, in JSON and in JSON inside a string', () => {
    const body = JSON.stringify({
      messages: [{ role: 'user', content: 'hello' }],
      password: 'hunter2',
      metadata: {
        client_secret: 'abc',
        apiKey: 'k1',
        'x-api-key': 'k2',
        refresh_token: 'r',
        note: 'keep me',
      },
      tool: { arguments: JSON.stringify({ db_password: 'p@ss"word', user: 'bob' }) },
    });
    const out = redactSecrets(body);
    for (const secret of ['hunter2', '"abc"', 'k1', 'k2', '"r"', 'p@ss'])
      assert.ok(!out.includes(secret), `${secret} in ${out}`);
    for (const kept of ['hello', 'keep me', 'bob']) assert.ok(out.includes(kept), `${kept} lost: ${out}`);
    // Still JSON, the secrets' values replaced, the nested JSON string still JSON.
    const parsed = JSON.parse(out);
    assert.equal(parsed.password, REDACTED);
    assert.equal(parsed.metadata.client_secret, REDACTED);
    assert.equal(JSON.parse(parsed.tool.arguments).db_password, REDACTED);
    assert.equal(JSON.parse(parsed.tool.arguments).user, 'bob');
  });

  it('leaves text without secrets alone (words like "token" in prose, short sk- words)', () => {
    const text = '{"content":"count the tokens; sk-short is fine","max_tokens":16}';
    assert.equal(redactSecrets(text), text);
  });
});

describe('body log: size cap', () => {
  it('keeps a body under the cap whole, unmarked', () => {
    assert.deepEqual(loggedBody('{"a":1}', 1024), { text: '{"a":1}', truncated: false });
  });

  it('cuts a body over the cap at the cap and says how long it was', () => {
    const body = 'x'.repeat(5000);
    const r = loggedBody(body, 1024);
    assert.equal(r.truncated, true);
    assert.ok(r.text.startsWith('x'.repeat(1024)));
    assert.ok(!r.text.startsWith('x'.repeat(1025)));
    assert.match(r.text, /…\[truncated: the body was 5000 bytes\]$/);
  });

  it('never cuts inside a UTF-8 character, and counts bytes, not characters', () => {
    const body = 'é'.repeat(1000); // 2000 bytes
    const r = loggedBody(body, 1001);
    assert.equal(r.truncated, true);
    const kept = r.text.slice(0, r.text.indexOf('…[truncated'));
    assert.equal(kept, 'é'.repeat(500));
    assert.match(r.text, /the body was 2000 bytes/);
  });

  it('redacts before it cuts: a key across the cut is not left half-visible', () => {
    const body = `${'y'.repeat(1000)} ${OUR_KEY} ${'z'.repeat(5000)}`;
    const r = loggedBody(body, 1020);
    assert.ok(!r.text.includes('a1B2c3D4e5'), r.text);
  });

  it('caps each of request and response', () => {
    const b = requestBodies('r'.repeat(3000), 'a'.repeat(10), 1024);
    assert.equal(b.requestTruncated, true);
    assert.equal(b.responseTruncated, undefined);
    assert.equal(b.response, 'a'.repeat(10));
  });
});

describe('body log: stream capture', () => {
  it('keeps the frames one a line, redacted, and past the cap only counts them', () => {
    const cap = new FrameCapture(1024);
    const enc = new TextEncoder();
    cap.add(enc.encode(JSON.stringify({ delta: `key ${OUR_KEY}` })));
    for (let i = 0; i < 200; i++) cap.add(enc.encode(JSON.stringify({ delta: `word ${i}` })));
    const r = cap.logged();
    assert.equal(r.truncated, true);
    assert.ok(!r.text.includes(OUR_KEY));
    assert.ok(r.text.startsWith('{"delta":"key sk-[redacted]"}\n{"delta":"word 0"}\n'), r.text.slice(0, 80));
    assert.match(r.text, /…\[truncated: the body was \d+ bytes\]$/);
    assert.ok(Buffer.byteLength(r.text.slice(0, r.text.indexOf('…[truncated'))) <= 1024);
  });

  it('a short stream is kept whole', () => {
    const cap = new FrameCapture(1024);
    cap.add(new TextEncoder().encode('{"delta":"hi"}'));
    assert.deepEqual(cap.logged(), { text: '{"delta":"hi"}\n', truncated: false });
  });
});
