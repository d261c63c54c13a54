// The agent fleet as a separate process (the peer of the snmp-poll-fleet benchmark, so its CPU and
// memory do not count against the poller): `node snmp-fleet-peer.js '<FleetOptions JSON>'` starts
// the fleet, prints one JSON line {ports, interfaces} and runs until SIGTERM or its stdin closes
// (the parent went away), then closes every socket and exits.
import { Fleet, type FleetOptions } from '../src/snmp/fleet.js';

const fleet = new Fleet(JSON.parse(process.argv[2] ?? '{}') as FleetOptions);
await fleet.start();
process.stdout.write(JSON.stringify({ ports: fleet.ports, interfaces: fleet.agents().map((a) => a.interfaces) }) + '\n');
const stop = async () => {
  await fleet.stop();
  process.exit(0);
};
process.once('SIGTERM', () => void stop());
process.stdin.on('end', () => void stop());
process.stdin.resume();
