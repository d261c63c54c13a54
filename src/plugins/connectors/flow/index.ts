// The flow connector's sides, as the registry takes them (one line in ../all.ts names this folder).
export { default as source } from './source.js';
