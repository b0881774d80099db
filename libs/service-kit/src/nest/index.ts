export * from './client-proxy.js';
export * from './filters.js';
export * from './lifetime.js';
export * from './microservice.js';
export * from './nest-logger.js';
export * from './ops-server.js';
export * from './transport.js';
