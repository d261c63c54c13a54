// The ves connector's sides, as the registry takes them (one line in ../all.ts names this folder).
export { default as sink } from './sink.js';
