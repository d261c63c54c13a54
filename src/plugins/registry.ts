// The one list of plugins. Validation, `svc plugins`, /api/plugins and docs/plugins/ are all
// built from it; adding a plugin means writing its module and adding one import line here.
import type { AnyPlugin, PluginKind, SerializerPlugin, SinkPlugin, SourcePlugin, TransformPlugin } from './types.js';

import amqpSource from './connectors/amqp/source.js';
import azureBlobSource from './connectors/azure_blob/source.js';
import clickhouseSource from './connectors/clickhouse/source.js';
import corbaSource from './connectors/corba/source.js';
import elasticsearchSource from './connectors/elasticsearch/source.js';
import influxdbSource from './connectors/influxdb/source.js';
import ftpSource from './connectors/ftp/source.js';
import gcsSource from './connectors/gcs/source.js';
import gnmiSource from './connectors/gnmi/source.js';
import kafkaSource from './connectors/kafka/source.js';
import mqttSource from './connectors/mqtt/source.js';
import natsSource from './connectors/nats/source.js';
import prometheusRwSource from './connectors/prometheus_rw/source.js';
import redisSource from './connectors/redis/source.js';
import restSource from './connectors/rest/source.js';
import s3Source from './connectors/s3/source.js';
import sftpSource from './connectors/sftp/source.js';
import snmpPollSource from './connectors/snmp_poll/source.js';
import snmpTrapSource from './connectors/snmp_trap/source.js';
import sqlSource from './connectors/sql/source.js';
import syslogSource from './connectors/syslog/source.js';
import websocketSource from './connectors/websocket/source.js';
import localSource from './sources/local.js';
import webhookSource from './sources/webhook.js';

import amqpSink from './connectors/amqp/sink.js';
import azureBlobSink from './connectors/azure_blob/sink.js';
import clickhouseSink from './connectors/clickhouse/sink.js';
import elasticsearchSink from './connectors/elasticsearch/sink.js';
import influxdbSink from './connectors/influxdb/sink.js';
import ftpSink from './connectors/ftp/sink.js';
import gcsSink from './connectors/gcs/sink.js';
import opensearchSink from './connectors/opensearch/sink.js';
import kafkaSink from './connectors/kafka/sink.js';
import mqttSink from './connectors/mqtt/sink.js';
import natsSink from './connectors/nats/sink.js';
import redisSink from './connectors/redis/sink.js';
import restSink from './connectors/rest/sink.js';
import s3Sink from './connectors/s3/sink.js';
import sftpSink from './connectors/sftp/sink.js';
import snmpTrapSink from './connectors/snmp_trap/sink.js';
import sqlSink from './connectors/sql/sink.js';
import vesSink from './connectors/ves/sink.js';
import websocketSink from './connectors/websocket/sink.js';
import localSink from './sinks/local.js';

import avroSerializer from './serializers/avro.js';
import asn1Serializer from './serializers/asn1.js';
import bytesSerializer from './serializers/bytes.js';
import csvSerializer from './serializers/csv.js';
import jsonSerializer from './serializers/json.js';
import msgpackSerializer from './serializers/msgpack.js';
import ndjsonSerializer from './serializers/ndjson.js';
import pmXmlSerializer from './serializers/pm_xml.js';
import protobufSerializer from './serializers/protobuf.js';
import parquetSerializer from './serializers/parquet.js';
import textSerializer from './serializers/text.js';
import xmlSerializer from './serializers/xml.js';

import addField from './transforms/add_field.js';
import aggregate from './transforms/aggregate.js';
import cast from './transforms/cast.js';
import coalesceFields from './transforms/coalesce_fields.js';
import counterDelta from './transforms/counter_delta.js';
import deduplicate from './transforms/deduplicate.js';
import drop from './transforms/drop.js';
import enrich from './transforms/enrich.js';
import explode from './transforms/explode.js';
import filter from './transforms/filter.js';
import flatten from './transforms/flatten.js';
import hexDecode from './transforms/hex_decode.js';
import injectMeta from './transforms/inject_meta.js';
import jmespath from './transforms/jmespath.js';
import jsonFlatten from './transforms/json_flatten.js';
import limit from './transforms/limit.js';
import mask from './transforms/mask.js';
import melt from './transforms/melt.js';
import project from './transforms/project.js';
import regexExtract from './transforms/regex_extract.js';
import rename from './transforms/rename.js';
import selectFromList from './transforms/select_from_list.js';
import sort from './transforms/sort.js';
import template from './transforms/template.js';
import timestampNormalize from './transforms/timestamp_normalize.js';
import unnest from './transforms/unnest.js';
import validate from './transforms/validate.js';
import valueMap from './transforms/value_map.js';
import windowAggregate from './transforms/window_aggregate.js';

const byKey = <P extends AnyPlugin>(list: P[]) => new Map(list.map((p) => [p.key, p] as const));

export const sources: ReadonlyMap<string, SourcePlugin> = byKey<SourcePlugin>([
  localSource, webhookSource, amqpSource, azureBlobSource, clickhouseSource, corbaSource, elasticsearchSource, influxdbSource, ftpSource, gcsSource, gnmiSource, kafkaSource, mqttSource, natsSource, prometheusRwSource, redisSource, restSource, s3Source, sftpSource, snmpPollSource, snmpTrapSource, sqlSource, syslogSource, websocketSource,
]);
export const sinks: ReadonlyMap<string, SinkPlugin> = byKey<SinkPlugin>([
  localSink, amqpSink, azureBlobSink, clickhouseSink, elasticsearchSink, influxdbSink, ftpSink, gcsSink, opensearchSink, kafkaSink, mqttSink, natsSink, redisSink, restSink, s3Sink, sftpSink, snmpTrapSink, sqlSink, vesSink, websocketSink,
]);
export const serializers: ReadonlyMap<string, SerializerPlugin> = byKey<SerializerPlugin>([
  avroSerializer,
  asn1Serializer,
  bytesSerializer,
  csvSerializer,
  jsonSerializer,
  msgpackSerializer,
  ndjsonSerializer,
  parquetSerializer,
  protobufSerializer,
  pmXmlSerializer,
  textSerializer,
  xmlSerializer,
]);
export const transforms: ReadonlyMap<string, TransformPlugin> = byKey<TransformPlugin>([
  addField, aggregate, cast, coalesceFields, counterDelta, deduplicate, drop, enrich, explode, filter, flatten, hexDecode, injectMeta, jmespath, jsonFlatten, limit, mask, melt, project,
  regexExtract, rename, selectFromList, sort, template, timestampNormalize, unnest, validate, valueMap, windowAggregate,
]);

export const registry: Record<PluginKind, ReadonlyMap<string, AnyPlugin>> = {
  source: sources,
  sink: sinks,
  serializer: serializers,
  transform: transforms,
};

/** Registered keys by category: the body of `GET /api/plugins` and of `svc plugins --json`. */
export function pluginKeys() {
  return {
    sources: [...sources.keys()],
    sinks: [...sinks.keys()],
    serializers: [...serializers.keys()],
    transforms: [...transforms.keys()],
  };
}
