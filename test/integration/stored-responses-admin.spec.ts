/**
 * The operators' view of stored responses (the Responses API's `store`): GET and DELETE
 * /admin/members/{id}/stored-responses on the real stack. Responses are made through the `openai` SDK
 * (chat-F on the simulator); the count covers one member only, the purge is audited, needs write access,
 * and afterwards the member's responses are gone for the API too (404) while another member's stay.
 * The console's member page shows the count and purges behind a confirmation (Debian's Chromium).
 */
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { MemberStoredResponsesSchema, StoredResponsesPurgedSchema } from '@infer/contracts';
import { OperatorsRepository } from '@infer/persistence';
import OpenAI from 'openai';
import { chromium } from 'playwright-core';
import { chromiumOptions, noChromium } from '../support/browser.js';
import { axe, buildConsole, signIn } from '../support/console-browser.js';
import { type Stack, startStack } from './harness.js';
import { ADMIN_TOKEN } from './limits-support.js';

describe('admin: a member stored-response count and purge', () => {
  let stack: Stack;
  let member: string;
  let other: string;
  let distDir: string | null = null;
  const OWNER = { email: 'owner@example.com', password: 'owner password 123' };

  before(async () => {
    if (!noChromium) distDir = await buildConsole();
    stack = await startStack({ env: { ADMIN_TOKEN, ...(distDir ? { CONSOLE_DIR: distDir } : {}) } });
    await new OperatorsRepository(stack.prisma).create({ ...OWNER, role: 'owner' });
    const byName = async (name: string) => {
      const m = await stack.prisma.member.findFirst({ where: { name } });
      assert.ok(m);
      return m.id;
    };
    member = await byName('it-inference');
    other = await byName('it-premium');
  });
  after(async () => {
    await stack?.close();
    if (distDir) rmSync(distDir, { recursive: true, force: true });
  });

  const admin = async (method: string, path: string, token: string | null = ADMIN_TOKEN) => {
    const res = await fetch(`${stack.url}${path}`, {
      method,
      headers: token ? { authorization: `Bearer ${token}` } : {},
    });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };

  it('counts the member responses, purges them (audited), and the API then answers 404', async () => {
    const mine = stack.client('inference');
    const theirs = stack.client('premium');
    const a = await mine.responses.create({ model: 'chat-F', input: 'one', max_output_tokens: 8 });
    await mine.responses.create({
      model: 'chat-F',
      input: 'two',
      max_output_tokens: 8,
      previous_response_id: a.id,
    });
    await mine.responses.create({ model: 'chat-F', input: 'not kept', max_output_tokens: 8, store: false });
    const kept = await theirs.responses.create({ model: 'chat-F', input: 'theirs', max_output_tokens: 8 });

    const count = await admin('GET', `/admin/members/${member}/stored-responses`);
    assert.equal(count.status, 200, JSON.stringify(count.body));
    assert.deepEqual(MemberStoredResponsesSchema.parse(count.body), {
      object: 'member.stored_responses',
      member_id: member,
      count: 2,
    });
    assert.equal(
      MemberStoredResponsesSchema.parse((await admin('GET', `/admin/members/${other}/stored-responses`)).body)
        .count,
      1,
    );

    // No credentials, or an API key: 401; an unknown member: 404 naming the id.
    assert.equal((await admin('DELETE', `/admin/members/${member}/stored-responses`, null)).status, 401);
    assert.equal(
      (await admin('DELETE', `/admin/members/${member}/stored-responses`, stack.keys.premium)).status,
      401,
    );
    const missing = await admin('GET', '/admin/members/nobody/stored-responses');
    assert.equal(missing.status, 404);
    assert.equal((missing.body.error as { param?: string }).param, 'id');

    const purged = await admin('DELETE', `/admin/members/${member}/stored-responses`);
    assert.equal(purged.status, 200, JSON.stringify(purged.body));
    assert.deepEqual(StoredResponsesPurgedSchema.parse(purged.body), {
      object: 'member.stored_responses.purged',
      member_id: member,
      deleted: 2,
    });
    assert.equal(
      MemberStoredResponsesSchema.parse(
        (await admin('GET', `/admin/members/${member}/stored-responses`)).body,
      ).count,
      0,
    );
    const gone = await mine.responses.retrieve(a.id).then(
      () => null,
      (e: unknown) => e,
    );
    assert.ok(gone instanceof OpenAI.NotFoundError, String(gone));
    // The other member's response is untouched.
    assert.equal((await theirs.responses.retrieve(kept.id)).id, kept.id);

    const audit = await stack.prisma.auditEvent.findMany({
      where: { action: 'member.stored_responses.purge', targetId: member },
    });
    assert.equal(audit.length, 1);
    assert.deepEqual(audit[0]?.after, { deleted: 2 });
  });

  it('the console member page shows the count and purges after a confirmation', {
    skip: noChromium,
  }, async () => {
    const mine = stack.client('inference');
    for (const input of ['a', 'b', 'c'])
      await mine.responses.create({ model: 'chat-F', input, max_output_tokens: 8 });
    const browser = await chromium.launch(chromiumOptions);
    try {
      const page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
      await signIn(page, stack.url, OWNER);
      await page.goto(`${stack.url}/console/members/${member}`);
      const count = page.getByTestId('stored-responses-count');
      await count.waitFor();
      assert.equal(await count.textContent(), '3');
      await axe(page, 'member page with stored responses');
      await page.getByRole('button', { name: 'Purge stored responses' }).click();
      const dialog = page.getByRole('dialog', { name: 'Purge stored responses?' });
      await dialog.waitFor();
      // Cancel keeps them.
      await dialog.getByRole('button', { name: 'Cancel' }).click();
      assert.equal(
        MemberStoredResponsesSchema.parse(
          (await admin('GET', `/admin/members/${member}/stored-responses`)).body,
        ).count,
        3,
      );
      await page.getByRole('button', { name: 'Purge stored responses' }).click();
      await dialog.getByRole('button', { name: 'Purge', exact: true }).click();
      await page.getByRole('status').filter({ hasText: 'Purged 3.' }).waitFor();
      await page.getByTestId('stored-responses-count').filter({ hasText: /^0$/ }).waitFor();
      assert.ok(await page.getByRole('button', { name: 'Purge stored responses' }).isDisabled());
      assert.equal(
        MemberStoredResponsesSchema.parse(
          (await admin('GET', `/admin/members/${member}/stored-responses`)).body,
        ).count,
        0,
      );
    } finally {
      await browser.close();
    }
  });
});
