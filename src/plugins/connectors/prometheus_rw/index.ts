// The prometheus_rw connector's sides, as the registry takes them (one line in ../all.ts names this folder).
export { default as source } from './source.js';
export { default as sink } from './sink.js';
