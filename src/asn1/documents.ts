// Whole-document decoding for the encodings that are not split into records: PER, UPER, XER, JER.
import type { MessageClass } from './ber-records.js';
import { fromJer, parseJerText } from './jer.js';
import { decodePer } from './per.js';
import { fromXer, parseXml } from './xer.js';

/** Decodes one document with the first message class that accepts it. */
export function decodeDocument(encoding: 'per' | 'uper' | 'xer' | 'jer', classes: MessageClass[], data: Buffer): unknown {
  let first: Error | undefined;
  // Text formats are parsed once, then tried against each class.
  const parsed = encoding === 'jer' ? parseJerText(data.toString('utf8')) : encoding === 'xer' ? parseXml(data.toString('utf8')) : undefined;
  for (const cls of classes) {
    try {
      if (encoding === 'jer') return fromJer(cls.type, parsed);
      if (encoding === 'xer') return fromXer(cls.type, parsed as ReturnType<typeof parseXml>);
      return decodePer(cls.type, data, encoding === 'per');
    } catch (err) {
      first ??= err as Error;
    }
  }
  throw first!;
}
