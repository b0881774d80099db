export * from './config.js';
export * from './engine-registry.js';
export * from './logger.js';
export * from './nats.js';
export * from './rpc.js';
export * from './safe-fetch.js';
export * from './service.js';
export * from './usage-stream.js';
