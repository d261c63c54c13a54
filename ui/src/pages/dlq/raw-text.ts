// A parse failure's raw input (base64 in the envelope) shown as text when it is text.

/** The raw bytes as text when they are valid UTF-8 without control characters (tabs and line ends aside). */
export function rawText(base64: string): { text: string; printable: boolean } {
  let bytes: Uint8Array;
  try {
    bytes = Uint8Array.from(atob(base64), (c) => c.charCodeAt(0));
  } catch {
    return { text: base64, printable: false };
  }
  try {
    const text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
    // eslint-disable-next-line no-control-regex
    if (!/[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/.test(text)) return { text, printable: true };
  } catch {
    // not UTF-8
  }
  return { text: base64, printable: false };
}
