export * from './config.js';
export * from './fs-store.js';
export * from './redis-store.js';
export * from './s3-store.js';
export * from './signed-url.js';
export * from './sigv4.js';
export * from './sniff.js';
export * from './store.js';
