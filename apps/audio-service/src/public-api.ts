/**
 * What the audio-service offers other projects (bench/, test/): the media steps and engines the
 * benches measure, and the spoken-audio test double. Imported as `@infer/audio-service/public`.
 */
export { planSpeechChunks } from './media/vad.js';
export { encodeWav, planSegments, type Segment, slice } from './media/wav.js';
export { spokenWithPauses } from './testing/spoken.js';
export { mergePieces } from './transcription/format.js';
export { pocketsphinxFactory } from './transcription/pocketsphinx.js';
