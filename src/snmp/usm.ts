// SNMPv3 User-based Security Model (RFC 3414, RFC 7860 SHA-2, RFC 3826 AES-128,
// draft-blumenthal-aes-usm-04 AES-192/256, draft-reeder-snmpv3-usm-3desede 3DES and the
// Cisco/Reeder AES variants). Keys are derived once per password (the 1 MB hash) and localised
// once per engine ID; both are cached, so hundreds of users from many engines cost a map look-up.
import { createCipheriv, createDecipheriv, createHash, createHmac, randomBytes } from 'node:crypto';
import { SnmpInputError } from './values.js';

export type AuthProtocol = 'MD5' | 'SHA' | 'SHA224' | 'SHA256' | 'SHA384' | 'SHA512';
/** AES192/AES256 extend short keys per Blumenthal (net-snmp's AES-192/AES-256); the C variants per Reeder (Cisco, snmpsim's AES192). */
export type PrivProtocol = 'DES' | '3DES' | 'AES128' | 'AES192' | 'AES256' | 'AES192C' | 'AES256C';

const AUTH: Record<AuthProtocol, { hash: string; macLen: number }> = {
  MD5: { hash: 'md5', macLen: 12 },
  SHA: { hash: 'sha1', macLen: 12 },
  SHA224: { hash: 'sha224', macLen: 16 },
  SHA256: { hash: 'sha256', macLen: 24 },
  SHA384: { hash: 'sha384', macLen: 32 },
  SHA512: { hash: 'sha512', macLen: 48 },
};

const PRIV: Record<PrivProtocol, { cipher: string; keyLen: number; extend: 'none' | 'blumenthal' | 'reeder' }> = {
  DES: { cipher: 'des-ede3-cbc', keyLen: 16, extend: 'none' },
  '3DES': { cipher: 'des-ede3-cbc', keyLen: 32, extend: 'reeder' },
  AES128: { cipher: 'aes-128-cfb', keyLen: 16, extend: 'none' },
  AES192: { cipher: 'aes-192-cfb', keyLen: 24, extend: 'blumenthal' },
  AES256: { cipher: 'aes-256-cfb', keyLen: 32, extend: 'blumenthal' },
  AES192C: { cipher: 'aes-192-cfb', keyLen: 24, extend: 'reeder' },
  AES256C: { cipher: 'aes-256-cfb', keyLen: 32, extend: 'reeder' },
};

export const AUTH_PROTOCOLS = Object.keys(AUTH) as AuthProtocol[];
export const PRIV_PROTOCOLS = Object.keys(PRIV) as PrivProtocol[];

const norm = (s: string): string => s.trim().toUpperCase().replace(/[-_ ]/g, '');

export function parseAuthProtocol(name: string): AuthProtocol {
  const n = norm(name);
  const p = n === 'SHA1' ? 'SHA' : n;
  if (p in AUTH) return p as AuthProtocol;
  throw new SnmpInputError(`unknown auth protocol "${name}"; use one of ${AUTH_PROTOCOLS.join(', ')}`);
}

export function parsePrivProtocol(name: string): PrivProtocol {
  const n = norm(name);
  const aliases: Record<string, PrivProtocol> = {
    AES: 'AES128',
    AESCFB128: 'AES128',
    DES3: '3DES',
    TRIPLEDES: '3DES',
    '3DESEDE': '3DES',
    AES192B: 'AES192',
    AES192BLMT: 'AES192',
    AES256B: 'AES256',
    AES256BLMT: 'AES256',
    AES192R: 'AES192C',
    AES256R: 'AES256C',
    AES192CISCO: 'AES192C',
    AES256CISCO: 'AES256C',
  };
  const p = aliases[n] ?? n;
  if (p in PRIV) return p as PrivProtocol;
  throw new SnmpInputError(`unknown privacy protocol "${name}"; use one of DES, 3DES, AES (=AES128), AES192, AES256, AES192C, AES256C`);
}

export interface UsmUserConfig {
  name: string;
  authProtocol?: AuthProtocol | string;
  /** Auth passphrase (at least 8 characters, RFC 3414). */
  authKey?: string;
  privProtocol?: PrivProtocol | string;
  privKey?: string;
}

/** A user ready for use: protocols validated, passphrase keys (Ku) computed. */
export interface UsmUser {
  name: string;
  auth?: { protocol: AuthProtocol; ku: Buffer };
  priv?: { protocol: PrivProtocol; ku: Buffer };
}

/** Keys of one user for one engine. */
export interface LocalUser {
  name: string;
  auth?: { protocol: AuthProtocol; key: Buffer; macLen: number; hash: string };
  priv?: { protocol: PrivProtocol; key: Buffer };
}

const kuCache = new Map<string, Buffer>();

/** RFC 3414 A.2: hash of the passphrase repeated to 1 MB. */
export function passwordToKu(hash: string, password: Buffer | string): Buffer {
  const pw = Buffer.isBuffer(password) ? password : Buffer.from(password, 'utf8');
  const cacheKey = hash + '\0' + pw.toString('hex');
  const hit = kuCache.get(cacheKey);
  if (hit) return hit;
  const block = Buffer.alloc(1048576);
  for (let i = 0; i < block.length; i += pw.length) pw.copy(block, i);
  const ku = createHash(hash).update(block).digest();
  if (kuCache.size > 10000) kuCache.clear();
  kuCache.set(cacheKey, ku);
  return ku;
}

export function localizeKey(hash: string, ku: Buffer, engineId: Buffer): Buffer {
  return createHash(hash).update(ku).update(engineId).update(ku).digest();
}

export function makeUser(cfg: UsmUserConfig): UsmUser {
  if (!cfg.name) throw new SnmpInputError('SNMPv3 user needs a name');
  const user: UsmUser = { name: cfg.name };
  if (cfg.authProtocol || cfg.authKey) {
    if (!cfg.authKey || cfg.authKey.length < 8) throw new SnmpInputError(`SNMPv3 user "${cfg.name}": auth key must be at least 8 characters`);
    const protocol = parseAuthProtocol(cfg.authProtocol ?? 'SHA');
    user.auth = { protocol, ku: passwordToKu(AUTH[protocol].hash, cfg.authKey) };
  }
  if (cfg.privProtocol || cfg.privKey) {
    if (!user.auth) throw new SnmpInputError(`SNMPv3 user "${cfg.name}": privacy needs authentication (auth_protocol and auth_key)`);
    if (!cfg.privKey || cfg.privKey.length < 8) throw new SnmpInputError(`SNMPv3 user "${cfg.name}": priv key must be at least 8 characters`);
    const protocol = parsePrivProtocol(cfg.privProtocol ?? 'AES128');
    user.priv = { protocol, ku: passwordToKu(AUTH[user.auth.protocol].hash, cfg.privKey) };
  }
  return user;
}

/** Localised privacy key, extended to the cipher's length where the hash is shorter. */
function privKeyFor(user: UsmUser, engineId: Buffer): Buffer {
  const hash = AUTH[user.auth!.protocol].hash;
  const spec = PRIV[user.priv!.protocol];
  let key = localizeKey(hash, user.priv!.ku, engineId);
  while (key.length < spec.keyLen) {
    // Blumenthal: append H(key so far). Reeder: append the localised key of passphrase = key so far.
    const more = spec.extend === 'reeder' ? localizeKey(hash, passwordToKu(hash, key), engineId) : createHash(hash).update(key).digest();
    key = Buffer.concat([key, more]);
  }
  return key.subarray(0, spec.keyLen);
}

const localCache = new WeakMap<UsmUser, Map<string, LocalUser>>();

/** The user's keys for an engine ID (cached per user object and engine ID). */
export function localize(user: UsmUser, engineId: Buffer): LocalUser {
  let perEngine = localCache.get(user);
  if (!perEngine) localCache.set(user, (perEngine = new Map()));
  const ck = engineId.toString('latin1');
  const hit = perEngine.get(ck);
  if (hit) return hit;
  const local: LocalUser = { name: user.name };
  if (user.auth) {
    const { hash, macLen } = AUTH[user.auth.protocol];
    local.auth = { protocol: user.auth.protocol, key: localizeKey(hash, user.auth.ku, engineId), macLen, hash };
  }
  if (user.priv) local.priv = { protocol: user.priv.protocol, key: privKeyFor(user, engineId) };
  // Bounded: a flood of forged engine IDs must not grow memory without limit.
  if (perEngine.size >= 10000) perEngine.clear();
  perEngine.set(ck, local);
  return local;
}

export function macLength(p: AuthProtocol): number {
  return AUTH[p].macLen;
}

export function computeMac(user: LocalUser, message: Buffer): Buffer {
  const a = user.auth!;
  return createHmac(a.hash, a.key).update(message).digest().subarray(0, a.macLen);
}

// Salts: a random start then a counter, as RFC 3414 8.1.1.1 / RFC 3826 3.1.2.1 suggest.
let desSalt = randomBytes(4).readUInt32BE(0);
let aesSalt = randomBytes(8).readBigUInt64BE(0);

/** DES and 3DES keys for node:crypto's des-ede3-cbc (single DES is EDE with K1 = K2 = K3, so no legacy provider is needed). */
function desParts(p: PrivProtocol, key: Buffer): { cipherKey: Buffer; preIv: Buffer } {
  if (p === 'DES') {
    const k = key.subarray(0, 8);
    return { cipherKey: Buffer.concat([k, k, k]), preIv: key.subarray(8, 16) };
  }
  return { cipherKey: key.subarray(0, 24), preIv: key.subarray(24, 32) };
}

export function encrypt(user: LocalUser, boots: number, time: number, plain: Buffer): { data: Buffer; privParams: Buffer } {
  const { protocol, key } = user.priv!;
  const spec = PRIV[protocol];
  if (protocol === 'DES' || protocol === '3DES') {
    const salt = Buffer.alloc(8);
    salt.writeUInt32BE(boots >>> 0, 0);
    salt.writeUInt32BE((desSalt = (desSalt + 1) >>> 0), 4);
    const { cipherKey, preIv } = desParts(protocol, key);
    const iv = Buffer.alloc(8);
    for (let i = 0; i < 8; i++) iv[i] = preIv[i]! ^ salt[i]!;
    const padded = plain.length % 8 ? Buffer.concat([plain, Buffer.alloc(8 - (plain.length % 8))]) : plain;
    const c = createCipheriv(spec.cipher, cipherKey, iv).setAutoPadding(false);
    return { data: Buffer.concat([c.update(padded), c.final()]), privParams: salt };
  }
  const salt = Buffer.alloc(8);
  aesSalt = BigInt.asUintN(64, aesSalt + 1n);
  salt.writeBigUInt64BE(aesSalt);
  const c = createCipheriv(spec.cipher, key, aesIv(boots, time, salt));
  return { data: Buffer.concat([c.update(plain), c.final()]), privParams: salt };
}

function aesIv(boots: number, time: number, salt: Buffer): Buffer {
  const iv = Buffer.alloc(16);
  iv.writeUInt32BE(boots >>> 0, 0);
  iv.writeUInt32BE(time >>> 0, 4);
  salt.copy(iv, 8, 0, 8);
  return iv;
}

/** Decrypts a scoped PDU; throws on malformed parameters (the caller reports a decryption error). */
export function decrypt(user: LocalUser, boots: number, time: number, privParams: Buffer, data: Buffer): Buffer {
  const { protocol, key } = user.priv!;
  const spec = PRIV[protocol];
  if (privParams.length !== 8) throw new Error('privacy parameters must be 8 bytes');
  if (protocol === 'DES' || protocol === '3DES') {
    if (data.length % 8) throw new Error('encrypted data is not a multiple of 8 bytes');
    const { cipherKey, preIv } = desParts(protocol, key);
    const iv = Buffer.alloc(8);
    for (let i = 0; i < 8; i++) iv[i] = preIv[i]! ^ privParams[i]!;
    const d = createDecipheriv(spec.cipher, cipherKey, iv).setAutoPadding(false);
    return Buffer.concat([d.update(data), d.final()]);
  }
  const d = createDecipheriv(spec.cipher, key, aesIv(boots, time, privParams));
  return Buffer.concat([d.update(data), d.final()]);
}

/** What a receiver makes of an authenticated notification's place in time (NotificationReplayGuard). */
export type Timeliness = 'ok' | 'notInTimeWindow' | 'replay';

/**
 * Replays of authenticated notifications. For a trap the sender is the authoritative engine (RFC
 * 3414 3.2 step 7b): per sender engine ID the receiver keeps its notion of the sender's
 * snmpEngineBoots and snmpEngineTime, learnt from the newest authenticated message, and a message
 * of earlier boots, or more than `windowS` older than that notion, is notInTimeWindow. Within the
 * window, the RFC alone would take a captured trap again and again; so a message seen already (same
 * engine ID, boots, time, msgID and MAC) is a replay. Informs (we are authoritative; their window is
 * the receiver's own) only use the second check.
 *
 * Memory is bounded: a message is remembered until it is out of the window anyway (windowS + 1 s),
 * at most `maxMessages` of them and `maxEngines` engine notions, the oldest forgotten first (past
 * those counts a replay of a forgotten message is taken again: the guard fails open rather than
 * growing). Only messages whose MAC was checked reach it, so only holders of a user's key fill it.
 */
export class NotificationReplayGuard {
  /** engine ID hex -> boots, newest time seen, and when (ms) it was seen: engine time now = latest + elapsed. */
  private readonly engines = new Map<string, { boots: number; latest: number; at: number }>();
  /** message key -> when it leaves the window (ms); one retention for all, so insertion order is expiry order. */
  private readonly seen = new Map<string, number>();

  constructor(
    private readonly windowS: number,
    private readonly maxMessages = 100_000,
    private readonly maxEngines = 10_000,
  ) {}

  check(m: { engineId: Buffer; boots: number; time: number; msgId: number }, mac: Buffer, senderAuthoritative: boolean, now = Date.now()): Timeliness {
    const id = m.engineId.toString('hex');
    const e = senderAuthoritative ? this.engines.get(id) : undefined;
    if (senderAuthoritative) {
      if (m.boots >= 2147483647) return 'notInTimeWindow'; // snmpEngineBoots latched at its maximum (RFC 3414 2.2.2)
      if (e && (m.boots < e.boots || (m.boots === e.boots && m.time < e.latest + Math.floor((now - e.at) / 1000) - this.windowS))) return 'notInTimeWindow';
    }
    for (const [k, expires] of this.seen) {
      if (expires > now) break;
      this.seen.delete(k);
    }
    const key = `${id}/${m.boots}/${m.time}/${m.msgId}/${mac.toString('hex')}`;
    if (this.seen.has(key)) return 'replay';
    this.seen.set(key, now + (this.windowS + 1) * 1000);
    if (this.seen.size > this.maxMessages) this.seen.delete(this.seen.keys().next().value as string);
    if (senderAuthoritative && (!e || m.boots > e.boots || (m.boots === e.boots && m.time > e.latest))) {
      this.engines.delete(id); // re-inserted: least recently updated first
      this.engines.set(id, { boots: m.boots, latest: m.time, at: now });
      if (this.engines.size > this.maxEngines) this.engines.delete(this.engines.keys().next().value as string);
    }
    return 'ok';
  }

  /** Messages and engines remembered (for tests of the bounds). */
  get size(): { messages: number; engines: number } {
    return { messages: this.seen.size, engines: this.engines.size };
  }
}
