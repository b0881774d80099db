import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { snippets } from './snippets.js';

describe('account snippets', () => {
  const all = snippets('https://api.example.com/v1/', 'chat-E');
  const by = (id: string) => all.find((s) => s.id === id)?.code ?? '';

  it('fills the base URL and model into every client', () => {
    assert.deepEqual(
      all.map((s) => s.id),
      ['curl', 'python', 'node', 'codex', 'claude'],
    );
    assert.match(by('curl'), /curl https:\/\/api\.example\.com\/v1\/chat\/completions/);
    assert.match(by('python'), /base_url="https:\/\/api\.example\.com\/v1"/);
    assert.match(by('node'), /baseURL: 'https:\/\/api\.example\.com\/v1'/);
    assert.match(by('codex'), /base_url = "https:\/\/api\.example\.com\/v1"\n/);
    for (const s of all) assert.match(s.code, /chat-E/, s.id);
  });

  it("gives Claude Code the gateway's origin without /v1, and never a key", () => {
    assert.match(by('claude'), /ANTHROPIC_BASE_URL=https:\/\/api\.example\.com\n/);
    for (const s of all) assert.doesNotMatch(s.code, /sk-inf-/);
  });
});
