// Field names <-> XML names, and XML text escaping, for the xml serializer.
//
// A field name that is not a usable XML name has each offending character written as `_xHHHH_`
// (`_xHHHHHHHH_` beyond the BMP), the convention of .NET's XmlConvert.EncodeName and SQL Server's
// FOR XML; reading reverses it. "Usable" is deliberately narrower than XML 1.0 5th edition: letters,
// digits and combining marks of the BMP plus `_ - . ·`, no `:` (an unbound prefix is a namespace
// error) and nothing the output encoding cannot hold, so expat-based readers (Python) accept it.
const START = /[\p{L}_]/u;
const CHAR = /[\p{L}\p{Nd}\p{Mn}\p{Mc}_.\-\u00B7]/u;
/** An `_x` that would read as an escape: the underscore itself gets escaped. */
const ESCAPE_LIKE = /^_x(?:[0-9A-Fa-f]{4}|[0-9A-Fa-f]{8})_/;
const hex = (cp: number) =>
  cp
    .toString(16)
    .toUpperCase()
    .padStart(cp > 0xffff ? 8 : 4, '0');

/** The XML name for a field name; `maxChar` is the highest code point the output encoding holds. */
export function encodeName(name: string, maxChar: number): string {
  if (name === '') return '_x_';
  let out = '';
  let first = true;
  for (let i = 0; i < name.length; ) {
    const cp = name.codePointAt(i)!;
    const ch = String.fromCodePoint(cp);
    // 0x80-0xBF holds letters (ª µ º) that XML names do not allow; only · (0xB7) is a name character.
    const ok =
      cp <= 0xffff &&
      cp <= maxChar &&
      (cp < 0x80 || cp >= 0xc0 || cp === 0xb7) &&
      (first ? START : CHAR).test(ch) &&
      !(ch === '_' && ESCAPE_LIKE.test(name.slice(i)));
    out += ok ? ch : `_x${hex(cp)}_`;
    i += ch.length;
    first = false;
  }
  return out;
}

const ESCAPED = /_x([0-9A-Fa-f]{8}|[0-9A-Fa-f]{4})_/g;

/** The field name for an XML name (reverses encodeName; other names unchanged). */
export function decodeName(name: string): string {
  if (name === '_x_') return '';
  return name.includes('_x') ? name.replace(ESCAPED, (_, h: string) => String.fromCodePoint(Math.min(parseInt(h, 16), 0x10ffff))) : name;
}

// Characters XML 1.0 cannot hold at all, not even as a character reference.
const INVALID_CHARS = '\\u0000-\\u0008\\u000B\\u000C\\u000E-\\u001F\\uFFFE\\uFFFF\\p{Cs}';

/** Escapers for element text and attribute values, for an output encoding up to `maxChar`. */
export function escapersFor(maxChar: number) {
  const wide = maxChar < 0x10ffff ? `\\u{${(maxChar + 1).toString(16)}}-\\u{10FFFF}` : '';
  const text = new RegExp(`[&<>\\r${INVALID_CHARS}${wide}]`, 'gu');
  const attr = new RegExp(`[&<>"\\t\\n\\r${INVALID_CHARS}${wide}]`, 'gu');
  const one = (ch: string): string => {
    switch (ch) {
      case '&':
        return '&amp;';
      case '<':
        return '&lt;';
      case '>':
        return '&gt;';
      case '"':
        return '&quot;';
      default: {
        const cp = ch.codePointAt(0)!;
        // Unwritable characters become U+FFFD (or its reference when the encoding cannot hold it).
        if ((cp < 0x20 && cp !== 0x09 && cp !== 0x0a && cp !== 0x0d) || cp === 0xfffe || cp === 0xffff || (cp >= 0xd800 && cp <= 0xdfff))
          return maxChar >= 0xfffd ? '\ufffd' : '&#xFFFD;';
        // \r, and \t \n in attributes, would be normalized away by a reader: written as references.
        return `&#x${cp.toString(16).toUpperCase()};`;
      }
    }
  };
  return {
    text: (s: string) => s.replace(text, one),
    attr: (s: string) => s.replace(attr, one),
  };
}
