export * from './engine-spans.js';
export * from './genai.js';
export * from './logger.js';
export * from './metrics.js';
export * from './nest-logger.js';
export * from './propagation.js';
export * from './request-context.js';
export * from './sdk.js';
