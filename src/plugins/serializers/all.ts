// The serializers, one line per folder: adding one is its folder (an index.ts whose default export is the
// plugin) and its line here. The registry (../registry.ts) is built from this list.
export { default as asn1 } from './asn1/index.js';
export { default as avro } from './avro/index.js';
export { default as bytes } from './bytes/index.js';
export { default as csv } from './csv/index.js';
export { default as json } from './json/index.js';
export { default as msgpack } from './msgpack/index.js';
export { default as ndjson } from './ndjson/index.js';
export { default as parquet } from './parquet/index.js';
export { default as pm_xml } from './pm_xml/index.js';
export { default as protobuf } from './protobuf/index.js';
export { default as text } from './text/index.js';
export { default as xml } from './xml/index.js';
