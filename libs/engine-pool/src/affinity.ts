import { AffinityKey } from './hash.js';

/** A chat message as far as its affinity key reads it. */
export interface KeyMessage {
  role: string;
  content?: unknown;
}

/**
 * The affinity key of a chat request: its prompt's leading blocks up to the end of the first user turn
 * (system and developer prompts, tool names, the first user message), as the engine's template puts
 * them first. Every later turn of a conversation starts with exactly these blocks, so the whole
 * conversation maps to one key (and one replica, whose prefix cache then holds its history); two
 * conversations that share only a system prompt get different keys and spread over the fleet, each
 * replica caching that system prompt once. A long document in the first turn counts by its leading
 * KEY_BLOCKS blocks only (ADR 0060).
 */
export function chatAffinityKey(
  messages: readonly KeyMessage[],
  tools?: ReadonlyArray<{ function?: { name?: string } }>,
): number {
  const k = new AffinityKey();
  let i = 0;
  for (; i < messages.length; i++) {
    const m = messages[i] as KeyMessage;
    if (m.role !== 'system' && m.role !== 'developer') break;
    k.add(textOf(m.content));
  }
  if (tools) for (const t of tools) k.add(t.function?.name ?? '');
  const first = messages[i];
  if (first) {
    k.add(first.role);
    k.add(textOf(first.content));
  }
  return k.value();
}

/**
 * Prompt characters of a conversation's first turn that no engine can have cached yet: the messages
 * after its leading system and developer prompts (which other conversations share), or undefined for a
 * later turn (an assistant message present: its history is cached where the key's requests went).
 * Reads lengths only.
 */
export function coldChars(messages: readonly KeyMessage[]): number | undefined {
  let n = 0;
  let lead = true;
  for (const m of messages) {
    if (m.role === 'assistant' || m.role === 'tool') return undefined;
    if (lead && (m.role === 'system' || m.role === 'developer')) continue;
    lead = false;
    n += lengthOf(m.content);
  }
  return n;
}

function lengthOf(content: unknown): number {
  if (typeof content === 'string') return content.length;
  if (!Array.isArray(content)) return 0;
  let n = 0;
  for (const p of content)
    if (p && typeof p === 'object' && typeof (p as { text?: unknown }).text === 'string')
      n += (p as { text: string }).text.length;
  return n;
}

/** Text of a message content: a string, or the text parts of a part array. */
function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  let out = '';
  for (const p of content) {
    if (p && typeof p === 'object' && typeof (p as { text?: unknown }).text === 'string') {
      out += (p as { text: string }).text;
      if (out.length >= 4096) break;
    }
  }
  return out;
}

/** The affinity key of a raw completion prompt (legacy /completions). */
export function textAffinityKey(prompt: string): number {
  return new AffinityKey().add(prompt).value();
}
