import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { loadGatewayConfig } from './config.js';

/** The least a development gateway needs. */
const BASE = { ALLOW_INSECURE_HTTP: '1' };
const OIDC = {
  CONSOLE_OIDC_ISSUER: 'https://id.example.com',
  CONSOLE_OIDC_CLIENT_ID: 'infer-console',
  CONSOLE_OIDC_REDIRECT_URL: 'https://infer.example.com/admin/oidc/callback',
};

describe('gateway config: console single sign-on', () => {
  it('reads an empty client secret (the example Secret key, mounted optional) as unset', () => {
    const c = loadGatewayConfig({ ...BASE, CONSOLE_OIDC_CLIENT_SECRET: '' });
    assert.equal(c.CONSOLE_OIDC_CLIENT_SECRET, undefined);
    assert.equal(c.CONSOLE_OIDC_ISSUER, undefined);
  });

  it('keeps a client secret that is set', () => {
    const c = loadGatewayConfig({ ...BASE, ...OIDC, CONSOLE_OIDC_CLIENT_SECRET: 's3cret' });
    assert.equal(c.CONSOLE_OIDC_CLIENT_SECRET, 's3cret');
  });

  it('refuses to start with an issuer but an empty client secret, naming the setting', () => {
    assert.throws(
      () => loadGatewayConfig({ ...BASE, ...OIDC, CONSOLE_OIDC_CLIENT_SECRET: '' }),
      /CONSOLE_OIDC_ISSUER: CONSOLE_OIDC_ISSUER needs CONSOLE_OIDC_CLIENT_ID, CONSOLE_OIDC_CLIENT_SECRET/,
    );
  });
});

describe('gateway config: USAGE_BATCH_MAX', () => {
  it('defaults to 64 and takes 1 (one message per event) to 1,000', () => {
    assert.equal(loadGatewayConfig(BASE).USAGE_BATCH_MAX, 64);
    assert.equal(loadGatewayConfig({ ...BASE, USAGE_BATCH_MAX: '1' }).USAGE_BATCH_MAX, 1);
    assert.equal(loadGatewayConfig({ ...BASE, USAGE_BATCH_MAX: '1000' }).USAGE_BATCH_MAX, 1000);
  });

  it('refuses 0 and more than 1,000 (a message past NATS max_payload would never be stored), naming it', () => {
    assert.throws(() => loadGatewayConfig({ ...BASE, USAGE_BATCH_MAX: '0' }), /USAGE_BATCH_MAX/);
    assert.throws(() => loadGatewayConfig({ ...BASE, USAGE_BATCH_MAX: '5000' }), /USAGE_BATCH_MAX/);
  });
});
