// The simulated agents of the soak, in a process of their own (forked with an IPC channel) so that
// answering 200 agents' walks neither slows the load generators nor counts in the daemon's figures.
// It counts, per agent, the walks it was asked for (the first GETBULK of a walk names the walk's
// root exactly): the poll stream's "sent" side, against which the points in InfluxDB are counted.
import { Fleet } from '../src/snmp/fleet.js';

export interface FleetReady {
  type: 'ready';
  agents: { port: number; interfaces: number; sysName: string }[];
}
export interface FleetCounts {
  type: 'counts';
  /** Walks started per agent, in agent order. */
  walks: number[];
}
/** What the parent sends: the root OID of the walks to count, then `counts` requests. */
export type FleetRequest = { type: 'start'; agents: number; walkRoot: string } | { type: 'counts' };

let fleet: Fleet | undefined;
let walks: number[] = [];

process.on('message', (m: FleetRequest) => {
  void (async () => {
    if (m.type === 'start') {
      walks = new Array<number>(m.agents).fill(0);
      fleet = new Fleet({
        agents: m.agents,
        onActivity: (i, e) => {
          if (e.oids[0] === m.walkRoot) walks[i]!++;
        },
      });
      await fleet.start();
      const f = fleet;
      process.send!({ type: 'ready', agents: f.agents().map((a) => ({ port: a.port, interfaces: a.interfaces, sysName: a.sysName })) } satisfies FleetReady);
    } else if (m.type === 'counts') {
      process.send!({ type: 'counts', walks } satisfies FleetCounts);
    }
  })().catch((e: Error) => {
    process.stderr.write(`soak fleet: ${e.stack ?? e.message}\n`);
    process.exit(1);
  });
});
// The parent going away closes the channel: nothing is left listening.
process.on('disconnect', () => void fleet?.stop().finally(() => process.exit(0)));
