export { default as source } from './source.js';
