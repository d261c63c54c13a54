export { default as source } from './source.js';
export { default as sink } from './sink.js';
