// The nonce of this page's Content-Security-Policy. The server writes it on a meta tag per response;
// browsers hide the attribute from getAttribute, so it is read from the `nonce` property.
export function cspNonce(): string {
  const meta = document.querySelector<HTMLMetaElement>('meta[property="csp-nonce"]');
  return meta?.nonce ?? '';
}
