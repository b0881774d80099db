import { readFileSync } from 'node:fs';
import { ApiError } from '@infer/contracts';
import { ConfigError } from '@infer/runtime';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';

/**
 * The operator's content policy for image prompts: a file (YAML or JSON) named by
 * IMAGE_CONTENT_POLICY_FILE, read and validated at start-up:
 *
 *   blocked_terms: [gore, "some phrase"]     # whole words/phrases, case- and accent-insensitive
 *   blocked_patterns: ['\bkill(ing)?\s+\w+']  # JavaScript regular expressions, case-insensitive
 *   message: Your prompt was rejected by our content policy.   # optional
 *
 * A prompt that matches gets 400 `content_policy_violation` with `param: prompt`; the message never
 * says which rule matched. This is a policy filter, not a classifier: it blocks what the operator
 * lists and nothing else. Upstream engines may apply their own moderation on top (their refusals are
 * passed on as the same 400).
 */
export const ContentPolicyFileSchema = z.object({
  blocked_terms: z.array(z.string().trim().min(1)).default([]),
  blocked_patterns: z.array(z.string().min(1)).default([]),
  message: z.string().min(1).default('Your request was rejected by the content policy of this service.'),
});
export type ContentPolicyFile = z.infer<typeof ContentPolicyFileSchema>;

const normalize = (s: string) => s.normalize('NFKD').replace(/\p{M}/gu, '').toLowerCase();
const escapeRe = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

export class ContentPolicy {
  private readonly rules: RegExp[];

  constructor(private readonly policy: ContentPolicyFile) {
    this.rules = [
      ...policy.blocked_terms.map(
        (t) =>
          new RegExp(
            `(?<![\\p{L}\\p{N}])${normalize(t).split(/\s+/).map(escapeRe).join('\\s+')}(?![\\p{L}\\p{N}])`,
            'u',
          ),
      ),
      ...policy.blocked_patterns.map((p) => new RegExp(p, 'iu')),
    ];
  }

  /** A policy that lets everything through (no file configured). */
  static none(): ContentPolicy {
    return new ContentPolicy(ContentPolicyFileSchema.parse({}));
  }

  get size(): number {
    return this.rules.length;
  }

  /** Throws 400 content_policy_violation (param prompt) when the prompt matches a rule. */
  check(prompt: string): void {
    const text = normalize(prompt);
    for (const rule of this.rules) {
      if (rule.test(text) || rule.test(prompt)) throw ApiError.contentPolicy(this.policy.message, 'prompt');
    }
  }

  /** Reads and validates the policy file; a bad file refuses start-up with a clear message. */
  static load(file: string | undefined): ContentPolicy {
    if (!file) return ContentPolicy.none();
    const fail = (why: string) =>
      new ConfigError('image-service', [`IMAGE_CONTENT_POLICY_FILE (${file}): ${why}`]);
    let raw: unknown;
    try {
      raw = parseYaml(readFileSync(file, 'utf8'));
    } catch (e) {
      throw fail((e as Error).message);
    }
    const parsed = ContentPolicyFileSchema.safeParse(raw ?? {});
    if (!parsed.success) throw fail(z.prettifyError(parsed.error));
    for (const p of parsed.data.blocked_patterns) {
      try {
        new RegExp(p, 'iu');
      } catch (e) {
        throw fail(`blocked_patterns: ${(e as Error).message}`);
      }
    }
    return new ContentPolicy(parsed.data);
  }
}
