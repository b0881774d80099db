/** Types of tiny-llama-gguf.mjs (a plain Node script). */
export declare const TINY_CHAT_TEMPLATE: string;
export declare function tinyVocab(): Array<[string, number, number]>;
export interface TinyGgufOptions {
  seed?: number;
  contextLength?: number;
  chatTemplate?: string;
  scale?: number;
}
export declare function tinyLlamaGguf(opts?: TinyGgufOptions): Buffer;
export declare function writeTinyLlamaGguf(path: string, opts?: TinyGgufOptions): string;
