// One entry for every flow format: the version at the head of the datagram picks the decoder
// (`auto`), or the configured protocol must match it. Never throws anything but FlowDecodeError.
import type { Rec } from '../../types.js';
import { decodeNetflow5, decodeTemplated } from './netflow.js';
import { FlowDecodeError } from './reader.js';
import { decodeSflow } from './sflow.js';
import type { FlowProtocol, FlowState } from './state.js';

export type FlowProtocolSetting = FlowProtocol | 'auto';

/** The format of a datagram by its first bytes: NetFlow/IPFIX have a 2-byte version, sFlow a 4-byte one. */
export function sniff(buf: Buffer): FlowProtocol | undefined {
  if (buf.length < 4) return undefined;
  const v16 = buf.readUInt16BE(0);
  if (v16 === 5) return 'netflow5';
  if (v16 === 9) return 'netflow9';
  if (v16 === 10) return 'ipfix';
  if (buf.readUInt32BE(0) === 5) return 'sflow';
  return undefined;
}

/** The flow records of one datagram from `exporter` (its IP address). */
export function decodeFlowDatagram(buf: Buffer, exporter: string, state: FlowState, protocol: FlowProtocolSetting = 'auto', now = Date.now()): Rec[] {
  const found = sniff(buf);
  if (!found) {
    const head = buf.subarray(0, 4).toString('hex');
    throw new FlowDecodeError(buf.length < 4 ? `truncated: a datagram of ${buf.length} bytes` : `not a flow datagram: version bytes 0x${head}`);
  }
  if (protocol !== 'auto' && found !== protocol) throw new FlowDecodeError(`a ${found} datagram on a source of protocol ${protocol}`);
  try {
    if (found === 'netflow5') return decodeNetflow5(buf, exporter, state, now);
    if (found === 'sflow') return decodeSflow(buf, exporter, state, now);
    return decodeTemplated(buf, exporter, state, now);
  } catch (e) {
    if (e instanceof FlowDecodeError) throw e;
    // A bug of ours met by hostile input: still only this datagram's error, with what happened.
    throw new FlowDecodeError(`${found}: the decoder failed: ${(e as Error).message}`);
  }
}
