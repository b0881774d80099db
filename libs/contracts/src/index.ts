export * from './errors.js';
export * from './catalog.js';
export * from './subjects.js';
export * from './envelope.js';
export * from './common.js';
export * from './chat.js';
export * from './validate.js';
export * from './usage.js';
