import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { ApiError } from '@infer/contracts';

/**
 * Seals reasoning for stateless Responses clients (`include: ["reasoning.encrypted_content"]`):
 * AES-256-GCM under a server key, bound to the member (the member id is the additional authenticated
 * data, so one member's blob opens for no one else). A blob is `<key id>.<base64url(iv | ciphertext |
 * tag)>`: the key id picks the key, so keys rotate by adding a new first key and keeping the old ones
 * until the blobs they sealed are no longer sent back.
 *
 * Keys come from RESPONSES_SEAL_KEYS: comma-separated `<id>:<base64 of 32 bytes>`, the first one
 * seals, every one opens. Node's own `crypto` does the work (no library needed for one AEAD call).
 */
export interface SealKey {
  id: string;
  key: Buffer;
}

const IV = 12;
const TAG = 16;
const KEY_ID = /^[A-Za-z0-9_-]{1,16}$/;

/** Parses RESPONSES_SEAL_KEYS; throws a message naming the bad entry (start-up refuses it). */
export function parseSealKeys(spec: string): SealKey[] {
  const keys: SealKey[] = [];
  for (const raw of spec
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)) {
    const at = raw.indexOf(':');
    const id = raw.slice(0, at);
    if (at < 1 || !KEY_ID.test(id)) {
      throw new Error(
        `RESPONSES_SEAL_KEYS: each entry is <id>:<base64 key> with an id of 1-16 [A-Za-z0-9_-] (got '${raw.slice(0, 20)}...')`,
      );
    }
    const key = Buffer.from(raw.slice(at + 1), 'base64');
    if (key.length !== 32) {
      throw new Error(
        `RESPONSES_SEAL_KEYS: key '${id}' must be 32 bytes, base64-encoded (got ${key.length} bytes)`,
      );
    }
    if (keys.some((k) => k.id === id)) throw new Error(`RESPONSES_SEAL_KEYS: key id '${id}' appears twice`);
    keys.push({ id, key });
  }
  return keys;
}

/** The development key (ALLOW_INSECURE_HTTP only): fixed, so blobs survive restarts in development. */
export const DEV_SEAL_KEYS = 'dev:ZGV2ZWxvcG1lbnQtb25seS1yZWFzb25pbmctc2VhbCE=';

export class ReasoningSeal {
  private readonly byId: Map<string, Buffer>;

  constructor(private readonly keys: SealKey[]) {
    if (!keys.length) throw new Error('ReasoningSeal needs at least one key');
    this.byId = new Map(keys.map((k) => [k.id, k.key]));
  }

  seal(text: string, memberId: string): string {
    const k = this.keys[0] as SealKey;
    const iv = randomBytes(IV);
    const c = createCipheriv('aes-256-gcm', k.key, iv);
    c.setAAD(Buffer.from(memberId, 'utf8'));
    const body = Buffer.concat([iv, c.update(text, 'utf8'), c.final(), c.getAuthTag()]);
    return `${k.id}.${body.toString('base64url')}`;
  }

  /** The sealed text, or the 400 naming `param` for a blob this platform did not seal for this member. */
  open(blob: string, memberId: string, param: string): string {
    const dot = blob.indexOf('.');
    const key = dot > 0 ? this.byId.get(blob.slice(0, dot)) : undefined;
    const body = key ? Buffer.from(blob.slice(dot + 1), 'base64url') : null;
    if (!key || !body || body.length < IV + TAG) throw foreign(param);
    try {
      const d = createDecipheriv('aes-256-gcm', key, body.subarray(0, IV));
      d.setAAD(Buffer.from(memberId, 'utf8'));
      d.setAuthTag(body.subarray(body.length - TAG));
      return Buffer.concat([d.update(body.subarray(IV, body.length - TAG)), d.final()]).toString('utf8');
    } catch {
      throw foreign(param);
    }
  }
}

const foreign = (param: string) =>
  ApiError.invalid(
    'The encrypted_content of this reasoning item could not be opened: it was changed, or sealed by another deployment, key or member.',
    param,
  );
