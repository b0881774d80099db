export * from './engine-spans.js';
export * from './genai.js';
export * from './metrics.js';
export * from './propagation.js';
export * from './request-context.js';
export * from './sdk.js';
