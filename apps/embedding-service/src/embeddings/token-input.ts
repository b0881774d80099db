import { ApiError } from '@infer/contracts';
import type { EmbeddingEngine } from '../engines/engine.js';

/**
 * Token-id input of /v1/embeddings (`input` as an array of integers, or of integer arrays, as OpenAI
 * accepts and Python LangChain sends by default). The ids are read in the model's own tokenizer: the
 * engine turns them back into the text they spell (`detokenize`), which is then embedded like any text;
 * usage counts the ids. An engine without a tokenizer refuses them (400 naming `input`).
 */

/** The token-id lists of `input`, or null for text input. */
export function tokenLists(input: string | ReadonlyArray<string | number | number[]>): number[][] | null {
  if (typeof input === 'string' || input.length === 0) return null;
  if (typeof input[0] === 'number') return [input as number[]];
  if (Array.isArray(input[0])) return input as number[][];
  return null;
}

/** The texts the ids spell in the engine's tokenizer; a failure names the input (`input[i]`). */
export function detokenizeInputs(
  engine: EmbeddingEngine,
  modelId: string,
  lists: number[][],
  single: boolean,
): string[] {
  if (!engine.detokenize) {
    throw ApiError.invalid(
      `The model '${modelId}' (engine ${engine.type}) does not take token ids: send the input as text.`,
      'input',
    );
  }
  const detokenize = engine.detokenize.bind(engine);
  return lists.map((ids, i) => {
    try {
      return detokenize(ids);
    } catch (e) {
      const param = single ? 'input' : `input[${i}]`;
      throw ApiError.invalid(`Invalid value for '${param}': ${(e as Error).message}.`, param);
    }
  });
}
