import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { PNG } from 'pngjs';
import { extensionOf, pngDimensions, sniffImageType } from './sniff.js';

describe('sniffImageType', () => {
  it('recognises PNG, JPEG and WebP by content, whatever the name or declared type', () => {
    const png = PNG.sync.write(new PNG({ width: 3, height: 2 }));
    assert.equal(sniffImageType(png), 'image/png');
    assert.equal(sniffImageType(Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0, 0x10])), 'image/jpeg');
    const webp = Buffer.concat([Buffer.from('RIFF'), Buffer.alloc(4), Buffer.from('WEBPVP8 ')]);
    assert.equal(sniffImageType(webp), 'image/webp');
  });

  it('refuses anything else', () => {
    assert.equal(sniffImageType(Buffer.from('hello, not an image')), null);
    assert.equal(sniffImageType(Buffer.from('GIF89a......')), null);
    assert.equal(sniffImageType(Buffer.alloc(0)), null);
    assert.equal(sniffImageType(Buffer.from([0x89, 0x50, 0x4e])), null);
    assert.equal(
      sniffImageType(Buffer.concat([Buffer.from('RIFF'), Buffer.alloc(4), Buffer.from('WAVE')])),
      null,
    );
  });

  it('reads PNG dimensions from IHDR', () => {
    const png = PNG.sync.write(new PNG({ width: 640, height: 256 }));
    assert.deepEqual(pngDimensions(png), { width: 640, height: 256 });
    assert.equal(pngDimensions(Buffer.from([0xff, 0xd8, 0xff])), null);
    assert.equal(extensionOf('image/png'), 'png');
    assert.equal(extensionOf('image/jpeg'), 'jpg');
    assert.equal(extensionOf('image/webp'), 'webp');
  });
});
