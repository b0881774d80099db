export * from './genai.js';
export * from './propagation.js';
export * from './sdk.js';
