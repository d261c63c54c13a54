// A URL as it may be shown (logs, reasons, the alert delivery history, the web UI's tables):
// without user and password, the values of credential-like query parameters as `***`. No imports:
// the web UI bundles it too.

/** Query parameters whose value is a credential (`?token=`, `?api_key=`, `?sig=`): masked wherever the URL is shown. */
export const SECRET_PARAM = /pass|secret|token|key|auth|sig|credential/i;

/** `url` without user and password, secret query values as `***`; a text that is not a URL is returned as is. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    const params = [...new Set([...u.searchParams.keys()].filter((k) => SECRET_PARAM.test(k)))];
    if (!u.username && !u.password && params.length === 0) return url;
    u.username = '';
    u.password = '';
    for (const k of params) u.searchParams.set(k, '***');
    return u.toString();
  } catch {
    return url;
  }
}
