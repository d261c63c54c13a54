// Constant-time string comparison for secrets (API key, bootstrap passwords).
import { createHash, timingSafeEqual } from 'node:crypto';

/**
 * True when `a` and `b` are equal, in time independent of where they differ and of their lengths:
 * both sides are hashed to SHA-256 first, so timingSafeEqual always compares 32 bytes.
 */
export function safeEqual(a: string, b: string): boolean {
  const da = createHash('sha256').update(a, 'utf8').digest();
  const db = createHash('sha256').update(b, 'utf8').digest();
  return timingSafeEqual(da, db);
}
