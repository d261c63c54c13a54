// Connector SDKs are loaded on first use, not when the registry is imported: every CLI command, the
// daemon and each worker thread import all plugin definitions, and most pipelines use one connector.

/** Runs `load` on the first call only; later calls return its first result (e.g. one `import()` promise). */
export function once<T>(load: () => T): () => T {
  let loaded = false;
  let value: T;
  return () => {
    if (!loaded) {
      value = load();
      loaded = true;
    }
    return value;
  };
}

/** A module loaded on the first call, and readable synchronously once it has loaded. */
export interface LazyModule<T> {
  (): Promise<T>;
  /**
   * The module once loaded, else undefined. For synchronous checks such as `e instanceof
   * m.SomeError`: an instance of a module's class cannot exist before the module has loaded.
   */
  readonly loaded: T | undefined;
}

/** `lazyModule(() => import('sdk'))`: imports it on first call, once. */
export function lazyModule<T>(load: () => Promise<T>): LazyModule<T> {
  let loaded: T | undefined;
  const get = once(() => load().then((m) => (loaded = m)));
  return Object.defineProperty(() => get(), 'loaded', { get: () => loaded }) as LazyModule<T>;
}
