import { Tiktoken } from 'js-tiktoken/lite';
import cl100kBase from 'js-tiktoken/ranks/cl100k_base';

let encoder: Tiktoken | null = null;
/** cl100k_base, built on first use (its ranks take a few MB). */
function cl100k(): Tiktoken {
  encoder ??= new Tiktoken(cl100kBase);
  return encoder;
}

/**
 * Token-id input for the engines that have no vocabulary of their own (lexical-hash, glove-sif): their
 * tokenizer is cl100k_base, the one of OpenAI's embedding models, which is what clients that tokenize
 * for OpenAI send (Python LangChain by default, with tiktoken). The ids are decoded to the text they
 * spell, which is then embedded as text. An id outside cl100k_base is refused.
 */
export function decodeCl100k(ids: readonly number[]): string {
  const enc = cl100k();
  for (const id of new Set(ids)) {
    if (enc.decode([id]) === '')
      throw new Error(`token id ${id} is not in the model's tokenizer (cl100k_base)`);
  }
  return enc.decode([...ids]);
}
