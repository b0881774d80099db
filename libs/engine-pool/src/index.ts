export * from './affinity.js';
export * from './discovery.js';
export * from './engine-metrics.js';
export * from './hash.js';
export * from './metrics.js';
export * from './pool.js';
export * from './queue.js';
export * from './ring.js';
