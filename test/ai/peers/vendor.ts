// What the three AI vendor test servers share: a loopback HTTP server (test/connectors/peers/http.ts)
// that logs every request and answers successful calls from a script the test writes (a text, a
// raw error, or no answer at all, to run into the client's timeout). Each vendor module supplies
// what the real API checks and the shapes it answers in.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { loopbackServer } from '../../connectors/peers/http.js';

export interface AiRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  headers: IncomingMessage['headers'];
  body: any;
  status: number;
}

/** One scripted answer: the model's text, a raw HTTP answer, or none (the request hangs until close). */
export type Step = { text: string } | { status: number; body: unknown } | { hang: true };

export interface AiPeer {
  /** Base URL to give as SVC_AI_BASE_URL (the vendor's path prefix included where its SDKs include it). */
  baseUrl: string;
  key: string;
  requests: AiRequest[];
  /** Answers the next requests that pass the checks, in order; a request with nothing scripted is a 500. */
  answer(...texts: string[]): void;
  script(...steps: Step[]): void;
  close(): Promise<void>;
}

/** A vendor API: where it listens, how it authenticates, what it requires of a body, how it answers. */
export interface Vendor {
  name: string;
  /** The path prefix that SVC_AI_BASE_URL carries (`/v1` for OpenAI-style servers, none for the others). */
  basePath: string;
  /** Checks method, path, credentials and body; a failure is the vendor's own error status and body. */
  check(
    req: { method: string; path: string; query: URLSearchParams; headers: IncomingMessage['headers']; body: any },
    key: string,
  ): { status: number; body: unknown } | undefined;
  /** A successful answer carrying `text`, in the vendor's shape. */
  success(text: string, req: { path: string; body: any }): unknown;
  /** The vendor's error body for a server-side failure. */
  serverError(message: string): unknown;
}

export async function startVendorPeer(vendor: Vendor, key: string): Promise<AiPeer> {
  const requests: AiRequest[] = [];
  const steps: Step[] = [];
  const hanging = new Set<ServerResponse>();
  const send = (res: ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { 'content-type': 'application/json; charset=utf-8' });
    res.end(JSON.stringify(body));
  };
  const server = await loopbackServer(
    undefined,
    async (req, res) => {
      const chunks: Buffer[] = [];
      for await (const c of req) chunks.push(c as Buffer);
      const url = new URL(req.url ?? '/', 'http://x');
      const raw = Buffer.concat(chunks).toString('utf8');
      let body: any;
      const logged: AiRequest = { method: req.method ?? '', path: url.pathname, query: url.searchParams, headers: req.headers, body: raw, status: 0 };
      requests.push(logged);
      const answer = (status: number, b: unknown) => {
        logged.status = status;
        send(res, status, b);
      };
      if (!/^application\/json\b/.test(req.headers['content-type'] ?? ''))
        return answer(400, vendor.serverError(`unsupported content type ${req.headers['content-type'] ?? 'none'}`));
      try {
        body = JSON.parse(raw);
      } catch {
        return answer(400, vendor.serverError('the body is not valid JSON'));
      }
      logged.body = body;
      const refused = vendor.check({ method: logged.method, path: url.pathname, query: url.searchParams, headers: req.headers, body }, key);
      if (refused) return answer(refused.status, refused.body);
      const step = steps.shift();
      if (!step) return answer(500, vendor.serverError('the test scripted no answer for this request'));
      if ('hang' in step) {
        hanging.add(res);
        res.on('close', () => hanging.delete(res));
        return;
      }
      if ('text' in step) return answer(200, vendor.success(step.text, { path: url.pathname, body }));
      return answer(step.status, step.body);
    },
    (res, e) => send(res, 500, vendor.serverError(e.message)),
  );
  return {
    baseUrl: `http://127.0.0.1:${server.port}${vendor.basePath}`,
    key,
    requests,
    answer: (...texts) => void steps.push(...texts.map((text) => ({ text }))),
    script: (...s) => void steps.push(...s),
    close: () => server.close(),
  };
}
