// The steady load: syslog datagrams, SNMPv2c traps and webhook requests at fixed rates, each
// carrying its sequence number (`soak-seq-N`, or the webhook body's `seq`), counted as sent once
// the send succeeded (a webhook body once it was answered 202; a refused one is sent again).
import { createSocket } from 'node:dgram';
import { sendTrap } from '../src/snmp/trap-sender.js';

export interface StreamLoad {
  /** Sequence numbers 0..sent-1 were sent. */
  sent: number;
  /** Sends that failed (a webhook answer other than 202, a socket error); retried for webhooks. */
  failures: number;
  lastError?: string;
}

/**
 * Calls `send(seq)` `rate` times a second (paced every 100 ms against the start, so a slow tick
 * catches up), at most `inFlight` at once; `send` resolves true when the number was delivered,
 * false when it must be sent again. stop() waits for the sends in flight.
 */
function paced(rate: number, inFlight: number, send: (seq: number) => Promise<boolean>) {
  const load: StreamLoad = { sent: 0, failures: 0 };
  const retry: number[] = [];
  let next = 0;
  let busy = 0;
  let stopped = false;
  const began = performance.now();
  const one = (seq: number) => {
    busy++;
    send(seq)
      .then(
        (ok) => (ok ? load.sent++ : (load.failures++, retry.push(seq))),
        (e: Error) => {
          load.failures++;
          load.lastError = e.message;
          retry.push(seq);
        },
      )
      .finally(() => busy--);
  };
  const tick = () => {
    const due = Math.floor((rate * (performance.now() - began)) / 1000);
    while (busy < inFlight && retry.length) one(retry.shift()!);
    while (!stopped && busy < inFlight && next < due) one(next++);
  };
  const timer = setInterval(tick, 100);
  return {
    load,
    /** Stops issuing new numbers; resolves once everything issued was delivered (retries included). */
    async stop(maxMs = 30_000) {
      stopped = true;
      const end = Date.now() + maxMs;
      while ((busy || retry.length) && Date.now() < end) await new Promise((r) => setTimeout(r, 100));
      clearInterval(timer);
      // `sent` counts deliveries; numbers issued but never delivered are reported as failures.
      return { issued: next, ...load };
    },
  };
}

const PAD = 'x'.repeat(120);

export function syslogLoad(port: number, rate: number) {
  const sock = createSocket('udp4');
  const p = paced(rate, 256, (seq) => {
    const msg = Buffer.from(`<134>1 ${new Date().toISOString()} soak-host soak 1 - - soak-seq-${seq} ${PAD}`);
    return new Promise((resolve, reject) => sock.send(msg, port, '127.0.0.1', (e) => (e ? reject(e) : resolve(true))));
  });
  return {
    load: p.load,
    async stop() {
      const r = await p.stop();
      sock.close();
      return r;
    },
  };
}

/** linkDown with an ifIndex and our sequence number as a string varbind (enterprises.99999.7.1). */
export function trapLoad(port: number, rate: number) {
  const p = paced(rate, 64, async (seq) => {
    await sendTrap({
      host: '127.0.0.1',
      port,
      version: '2c',
      community: 'public',
      trapOid: '1.3.6.1.6.3.1.1.5.3',
      varbinds: [
        { oid: '1.3.6.1.2.1.2.2.1.1.' + ((seq % 48) + 1), type: 'Integer32', value: (seq % 48) + 1 },
        { oid: '1.3.6.1.4.1.99999.7.1.0', type: 'OctetString', value: `soak-seq-${seq}` },
      ],
    });
    return true;
  });
  return { load: p.load, stop: () => p.stop() };
}

export function webhookLoad(url: string, rate: number) {
  const p = paced(rate, 32, async (seq) => {
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ seq, sent_at: new Date().toISOString(), pad: PAD }),
    });
    await res.arrayBuffer();
    return res.status === 202;
  });
  return { load: p.load, stop: () => p.stop() };
}
