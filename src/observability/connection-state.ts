// Where a connector's connection stands. The connector runtime (src/plugins/) reports it and the
// metrics count it; it lives here, below both, so that observability imports no plugin code.

/** Where a connector's connection stands; each change is logged once and counted by the runtime. */
export type ConnectionState = 'connecting' | 'connected' | 'disconnected' | 'failed';
