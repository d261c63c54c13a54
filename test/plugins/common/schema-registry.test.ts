import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  decodeMessageIndexes,
  encodeMessageIndexes,
  readWireHeader,
  registryFor,
  SchemaRegistryClient,
  SchemaRegistryError,
  wireHeader,
} from '../../../src/plugins/common/schema-registry.js';
import { startRegistryPeer, type RegistryPeer } from './registry-peer.js';

const S1 = '{"type":"record","name":"A","fields":[{"name":"x","type":"int"}]}';
const S2 = '{"type":"record","name":"A","fields":[{"name":"x","type":"int"},{"name":"y","type":"string","default":""}]}';

/** The error a request fails with (the test fails when it succeeds). */
const failure = (p: Promise<unknown>): Promise<SchemaRegistryError> =>
  p.then(
    () => {
      throw new Error('expected the request to fail');
    },
    (e: unknown) => e as SchemaRegistryError,
  );

/** A port nothing listens on: bound once, then closed. */
async function deadPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const { port } = s.address() as AddressInfo;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

describe('schema registry client against a registry peer', () => {
  let peer: RegistryPeer;
  let client: SchemaRegistryClient;
  beforeAll(async () => {
    peer = await startRegistryPeer();
    client = new SchemaRegistryClient({ url: peer.url + '/' });
  });
  afterAll(() => peer.close());

  it('registers, then finds the schema by id, by version, as latest and by lookup', async () => {
    const id1 = await client.register('ifaces-value', S1, 'AVRO');
    const id2 = await client.register('ifaces-value', S2, 'AVRO');
    expect(id2).not.toBe(id1);
    // Registering the same schema again answers the same id (the registry deduplicates).
    expect(await client.register('ifaces-value', S1, 'AVRO')).toBe(id1);
    expect(await client.schemaById(id1)).toEqual({ id: id1, schema: S1, schemaType: 'AVRO' });
    expect(await client.versions('ifaces-value')).toEqual([1, 2]);
    expect(await client.latest('ifaces-value')).toEqual({ id: id2, schema: S2, schemaType: 'AVRO', subject: 'ifaces-value', version: 2 });
    expect((await client.version('ifaces-value', 1)).id).toBe(id1);
    expect((await client.lookup('ifaces-value', S2, 'AVRO'))?.id).toBe(id2);
    expect(await client.lookup('ifaces-value', '"string"', 'AVRO')).toBeUndefined();
    expect(await client.lookup('nope', S1, 'AVRO')).toBeUndefined();
    expect(peer.requests).toContain('POST /subjects/ifaces-value/versions');
    expect(peer.requests).toContain('GET /schemas/ids/1');
  });

  it('sends schemaType for Protobuf and reads it back', async () => {
    const proto = 'syntax = "proto3"; message M { int32 a = 1; }';
    const id = await client.register('m-value', proto, 'PROTOBUF');
    expect(await client.schemaById(id)).toEqual({ id, schema: proto, schemaType: 'PROTOBUF' });
  });

  it('subject names are URL-encoded', async () => {
    const id = await client.register('a/b c', S1, 'AVRO');
    expect((await client.latest('a/b c')).id).toBe(id);
    expect(peer.requests).toContain('GET /subjects/a%2Fb%20c/versions/latest');
  });

  it('404s carry the registry error code and say what was not found', async () => {
    const e1 = await failure(client.latest('missing-subject'));
    expect(e1).toBeInstanceOf(SchemaRegistryError);
    expect((e1 as SchemaRegistryError).status).toBe(404);
    expect((e1 as SchemaRegistryError).code).toBe(40401);
    expect((e1 as Error).message).toMatch(
      /subject 'missing-subject' version latest not found: Subject 'missing-subject' not found\. \(HTTP 404, error_code 40401\)/,
    );
    const e2 = await failure(client.schemaById(999));
    expect(e2.message).toMatch(/schema id 999 not found: Schema 999 not found \(HTTP 404, error_code 40403\)/);
    const e3 = await failure(client.version('ifaces-value', 7));
    expect(e3.code).toBe(40402);
  });

  it('an unreachable registry is named as such', async () => {
    const c = new SchemaRegistryClient({ url: `http://127.0.0.1:${await deadPort()}` });
    const e = await failure(c.schemaById(1));
    expect(e).toBeInstanceOf(SchemaRegistryError);
    expect(e.message).toMatch(/^schema registry http:\/\/127\.0\.0\.1:\d+ is unreachable: ECONNREFUSED/);
    expect(e.status).toBe(0);
  });

  it('a registry that does not answer in time fails after the timeout', async () => {
    const silent = createServer(() => {
      /* never answers */
    });
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    const c = new SchemaRegistryClient({ url: `http://127.0.0.1:${(silent.address() as AddressInfo).port}`, timeoutMs: 300 });
    const t0 = Date.now();
    const e = await failure(c.schemaById(1));
    expect(e.message).toMatch(/no answer within 0\.3 s \(GET \/schemas\/ids\/1\)/);
    expect(Date.now() - t0).toBeLessThan(5000);
    silent.closeAllConnections();
    await new Promise<void>((r) => silent.close(() => r()));
  });

  it('the caller signal aborts a request', async () => {
    const ac = new AbortController();
    ac.abort();
    await expect(client.schemaById(1, ac.signal)).rejects.toThrow(/aborted/);
  });
});

describe('basic auth', () => {
  let peer: RegistryPeer;
  beforeAll(async () => {
    peer = await startRegistryPeer({ username: 'svc', password: 's3cret:x' });
    peer.add('t-value', S1);
  });
  afterAll(() => peer.close());

  it('credentials from SVC_SCHEMA_REGISTRY_USERNAME/PASSWORD; schema_registry_url overrides SVC_SCHEMA_REGISTRY_URL', async () => {
    // The process's registry settings, as the engine runner hands them to resolve().
    const env = { url: 'http://127.0.0.1:1', username: 'svc', password: 's3cret:x' };
    const c = registryFor(peer.url, env)!;
    expect(c.url).toBe(peer.url);
    expect((await c.latest('t-value')).schema).toBe(S1);
    expect(registryFor(undefined, env)!.url).toBe('http://127.0.0.1:1');
    expect(registryFor(undefined, {})).toBeUndefined();
  });

  it('wrong or missing credentials: 401 names the variables', async () => {
    for (const env of [{ username: 'svc', password: 'wrong' }, {}]) {
      const e = await failure(registryFor(peer.url, env)!.latest('t-value'));
      expect(e.status).toBe(401);
      expect(e.code).toBe(40101);
      expect(e.message).toMatch(/401 Unauthorized \(credentials come from SVC_SCHEMA_REGISTRY_USERNAME and SVC_SCHEMA_REGISTRY_PASSWORD\)/);
    }
  });
});

describe('Confluent wire format', () => {
  it('magic byte 0 and a big-endian 4-byte id', () => {
    expect(wireHeader(1).toString('hex')).toBe('0000000001');
    expect(wireHeader(0x01020304).toString('hex')).toBe('0001020304');
    expect(wireHeader(0xffffffff).toString('hex')).toBe('00ffffffff');
    expect(readWireHeader(Buffer.from('00000001ffaa', 'hex'))).toEqual({ id: 0x1ff, offset: 5 });
  });

  it('refuses a wrong magic byte and a short payload', () => {
    expect(() => readWireHeader(Buffer.from('0100000001aa', 'hex'))).toThrow(/first byte is 0x01, not the Confluent magic byte 0x00/);
    expect(() => readWireHeader(Buffer.from('000001', 'hex'))).toThrow(/3 bytes: too short/);
  });

  it('Protobuf message indexes: [0] is one 0 byte, others a zig-zag count and zig-zag indexes', () => {
    // Bytes as Confluent's MessageIndexes.toByteArray writes them (ByteUtils.writeVarint is zig-zag).
    expect(encodeMessageIndexes([0]).toString('hex')).toBe('00');
    expect(encodeMessageIndexes([1]).toString('hex')).toBe('0202');
    expect(encodeMessageIndexes([0, 2]).toString('hex')).toBe('040004');
    expect(encodeMessageIndexes([70]).toString('hex')).toBe('028c01');
    for (const ix of [[0], [1], [3, 0, 1], [70], [200, 5]]) {
      const b = Buffer.concat([encodeMessageIndexes(ix), Buffer.from([0xee])]);
      expect(decodeMessageIndexes(b, 0)).toEqual({ indexes: ix, pos: b.length - 1 });
    }
    expect(() => decodeMessageIndexes(Buffer.from([0x04, 0x02]), 0)).toThrow(/truncated/);
  });
});
