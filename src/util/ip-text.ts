// An IPv6 address in bytes as RFC 5952 text (lower case; the longest run of two or more zero
// groups, the first when tied, as `::`): how the flow source and the hex_decode transform print it.

/** The 16 bytes of `b` from `at` as RFC 5952 text. */
export function ipv6Text(b: Buffer, at = 0): string {
  const g: number[] = [];
  for (let i = 0; i < 8; i++) g.push(b.readUInt16BE(at + i * 2));
  let best = -1;
  let bestLen = 1;
  for (let i = 0; i < 8; ) {
    if (g[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && g[j] === 0) j++;
    if (j - i > bestLen) {
      best = i;
      bestLen = j - i;
    }
    i = j;
  }
  const hex = (xs: number[]) => xs.map((x) => x.toString(16)).join(':');
  return best < 0 ? hex(g) : `${hex(g.slice(0, best))}::${hex(g.slice(best + bestLen))}`;
}
