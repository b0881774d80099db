import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * Signed image URLs: `<base>/v1/images/files/<id>.<ext>?expires=<unix seconds>&sig=<HMAC>`, where the
 * signature is HMAC-SHA256 (base64url) over `<id>\n<expires>` with a secret only the gateway holds.
 * A URL cannot be forged or extended: changing the id or the expiry breaks the signature. After
 * `expires` the gateway refuses the URL (410) even if the image is still stored.
 */
export const IMAGE_FILES_PATH = '/v1/images/files';

export function signImage(id: string, expiresAtSeconds: number, secret: string): string {
  return createHmac('sha256', secret).update(`${id}\n${expiresAtSeconds}`).digest('base64url');
}

export function signedImageUrl(
  baseUrl: string,
  id: string,
  extension: string,
  expiresAtSeconds: number,
  secret: string,
): string {
  const base = baseUrl.replace(/\/+$/, '');
  const sig = signImage(id, expiresAtSeconds, secret);
  return `${base}${IMAGE_FILES_PATH}/${id}.${extension}?expires=${expiresAtSeconds}&sig=${sig}`;
}

export type SignatureCheck = 'valid' | 'expired' | 'invalid';

/**
 * Checks a signed URL's parts: 'invalid' when the signature does not match (whatever the expiry: a
 * forged URL learns nothing), 'expired' when it matches but `nowMs` is at or past the expiry.
 */
export function checkImageSignature(
  id: string,
  expires: string | undefined,
  sig: string | undefined,
  secret: string,
  nowMs: number,
): SignatureCheck {
  if (!expires || !/^\d{1,12}$/.test(expires) || !sig || !/^[A-Za-z0-9_-]{43}$/.test(sig)) return 'invalid';
  const expected = Buffer.from(signImage(id, Number(expires), secret));
  const given = Buffer.from(sig);
  if (expected.length !== given.length || !timingSafeEqual(expected, given)) return 'invalid';
  return nowMs >= Number(expires) * 1000 ? 'expired' : 'valid';
}
