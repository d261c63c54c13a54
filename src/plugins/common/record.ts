import type { Rec } from '../types.js';

/** `o[k] = v`, except that a field named `__proto__` (JSON.parse makes it an own field) stays data. */
export function setField(o: Rec, k: string, v: unknown) {
  if (k === '__proto__') Object.defineProperty(o, k, { value: v, writable: true, enumerable: true, configurable: true });
  else o[k] = v;
}
