import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { awsUriEncode, EMPTY_SHA256, sha256Hex, signV4 } from './sigv4.js';

// AWS's published example credentials and requests ("Signature Calculations for the Authorization
// Header: Transferring Payload in a Single Chunk", Amazon S3 API reference).
const creds = {
  accessKeyId: 'AKIAIOSFODNN7EXAMPLE',
  secretAccessKey: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY',
};
const at = new Date(Date.UTC(2013, 4, 24, 0, 0, 0));

describe('signV4 (AWS SigV4, header-based)', () => {
  it("reproduces AWS's GET Object example signature", () => {
    const h = signV4(
      {
        method: 'GET',
        url: new URL('https://examplebucket.s3.amazonaws.com/test.txt'),
        headers: { Range: 'bytes=0-9' },
        payloadHash: EMPTY_SHA256,
      },
      creds,
      'us-east-1',
      's3',
      at,
    );
    assert.equal(
      h.authorization,
      'AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,' +
        'SignedHeaders=host;range;x-amz-content-sha256;x-amz-date,' +
        'Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41',
    );
    assert.equal(h['x-amz-date'], '20130524T000000Z');
    assert.equal(h['x-amz-content-sha256'], EMPTY_SHA256);
    assert.equal(h.host, undefined, 'fetch sets Host itself from the URL');
  });

  it("reproduces AWS's PUT Object example signature (encoded key, body hash)", () => {
    const body = 'Welcome to Amazon S3.';
    assert.equal(sha256Hex(body), '44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072');
    const h = signV4(
      {
        method: 'PUT',
        url: new URL('https://examplebucket.s3.amazonaws.com/test$file.text'),
        headers: { Date: 'Fri, 24 May 2013 00:00:00 GMT', 'x-amz-storage-class': 'REDUCED_REDUNDANCY' },
        payloadHash: sha256Hex(body),
      },
      creds,
      'us-east-1',
      's3',
      at,
    );
    assert.match(
      h.authorization ?? '',
      /SignedHeaders=date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class,Signature=98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd$/,
    );
  });

  it('adds and signs the session token of temporary credentials', () => {
    const h = signV4(
      { method: 'GET', url: new URL('http://127.0.0.1:9000/b/k'), payloadHash: EMPTY_SHA256 },
      { ...creds, sessionToken: 'tok' },
      'eu-west-1',
      's3',
      at,
    );
    assert.equal(h['x-amz-security-token'], 'tok');
    assert.match(
      h.authorization ?? '',
      /SignedHeaders=host;x-amz-content-sha256;x-amz-date;x-amz-security-token,/,
    );
    assert.match(h.authorization ?? '', /\/20130524\/eu-west-1\/s3\/aws4_request,/);
  });

  it('encodes as RFC 3986 wants', () => {
    assert.equal(awsUriEncode('a b/c$~', true), 'a%20b/c%24~');
    assert.equal(awsUriEncode('a b/c', false), 'a%20b%2Fc');
    assert.equal(awsUriEncode('é', false), '%C3%A9');
  });
});
