// The connectors, one line per folder: adding a connector is its folder (with an index.ts that
// exports its source and/or sink) and its line here. The registry (../registry.ts) is built from this list.
export * as amqp from './amqp/index.js';
export * as azure_blob from './azure_blob/index.js';
export * as clickhouse from './clickhouse/index.js';
export * as corba from './corba/index.js';
export * as elasticsearch from './elasticsearch/index.js';
export * as ftp from './ftp/index.js';
export * as gcs from './gcs/index.js';
export * as gnmi from './gnmi/index.js';
export * as influxdb from './influxdb/index.js';
export * as kafka from './kafka/index.js';
export * as local from './local/index.js';
export * as mqtt from './mqtt/index.js';
export * as nats from './nats/index.js';
export * as opensearch from './opensearch/index.js';
export * as prometheus_rw from './prometheus_rw/index.js';
export * as redis from './redis/index.js';
export * as rest from './rest/index.js';
export * as s3 from './s3/index.js';
export * as sftp from './sftp/index.js';
export * as snmp_poll from './snmp_poll/index.js';
export * as snmp_trap from './snmp_trap/index.js';
export * as sql from './sql/index.js';
export * as syslog from './syslog/index.js';
export * as ves from './ves/index.js';
export * as webhook from './webhook/index.js';
export * as websocket from './websocket/index.js';
