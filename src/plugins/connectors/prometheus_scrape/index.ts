// The prometheus_scrape connector's side, as the registry takes it (one line in ../all.ts names this folder).
export { default as source } from './source.js';
