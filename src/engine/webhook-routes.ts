// POST /webhooks/<path>: bodies for webhook sources. Any content type is taken as raw bytes, up to
// SVC_WEBHOOK_MAX_BODY_BYTES (413 above). 202 means the body is stored durably (the source's spool);
// when it cannot be stored the sender gets a 503 and keeps the body. Served by the API and by a
// worker's ingress (src/cluster/worker.ts).
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Settings } from '../settings.js';
import type { WebhookHub } from '../plugins/connector-runtime/webhook-hub.js';
import { httpError, httpErrorWith, sendHttpError } from '../core/http-errors.js';

export default async function webhookRoutes(app: FastifyInstance, deps: { settings: Settings; webhooks: WebhookHub }) {
  // This plugin scope reads every body as bytes; the rest of the API keeps its JSON/YAML parsers.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: deps.settings.WEBHOOK_MAX_BODY_BYTES }, (_req, body, done) => done(null, body));

  app.post(
    '/webhooks/*',
    { bodyLimit: deps.settings.WEBHOOK_MAX_BODY_BYTES, schema: { tags: ['webhooks'], summary: 'Deliver a body to the webhook source serving this path' } },
    async (req: FastifyRequest<{ Params: { '*': string } }>, reply) => {
      const path = req.params['*'];
      const body = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
      const outcome = await deps.webhooks.deliver(path, req.headers.authorization, {
        body,
        contentType: req.headers['content-type'],
        receivedAt: new Date().toISOString(),
      });
      if (typeof outcome === 'object' && 'invalid' in outcome) {
        // Malformed for this source (a remote-write body that is not snappy protobuf): the sender drops it.
        return sendHttpError(reply, httpError('HTTP_WEBHOOK_REFUSED', path, outcome.invalid));
      }
      if (typeof outcome === 'object') {
        // The spool logs the failure once per write; the sender retries.
        return sendHttpError(
          reply,
          httpErrorWith(
            { 'retry-after': '1' },
            'HTTP_WEBHOOK_UNAVAILABLE',
            `the body for /webhooks/${path} could not be stored (${outcome.failed}); retry shortly`,
          ),
        );
      }
      switch (outcome) {
        case 'queued': {
          const status = deps.webhooks.acceptedStatus(path);
          return status === 204 ? reply.code(204).send() : reply.code(status).send({ status: 'queued' });
        }
        case 'unknown':
          return sendHttpError(reply, httpError('HTTP_WEBHOOK_NOT_FOUND', path));
        case 'unauthorized':
          return sendHttpError(reply, httpError('HTTP_WEBHOOK_UNAUTHORIZED'));
        case 'full':
          return sendHttpError(
            reply,
            httpErrorWith({ 'retry-after': '1' }, 'HTTP_WEBHOOK_UNAVAILABLE', `the queue of /webhooks/${path} is full; retry shortly`),
          );
      }
    },
  );
}
