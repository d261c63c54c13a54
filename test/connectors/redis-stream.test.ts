// The redis connector in stream mode (XADD / XREAD): the shared conformance suite against the shared
// Redis, whose disruption kills the connectors' connections (CLIENT KILL). List mode and the
// connector-specific cases are in redis.test.ts.
import { conformance } from './conformance.js';
import { redisStream } from './peers/redis.js';

conformance(redisStream);
