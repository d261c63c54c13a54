// The one HTTP error catalog of the daemon's API, the console and the worker's ingress, as Fastify
// keeps its own errors (`createError(code, message, statusCode)`): each error has a stable code,
// the status it is answered with and its message template (`%s` takes the throw site's words).
// docs/api-errors.md is generated from it, and a test checks both ways that every code is
// documented and every documented code is in the catalog. Every error body is `{detail}` (spec doc
// 2 section 7); the code is on the thrown error (`err.code`), not in the body.
//
// core/ is below every other folder: this file imports nothing from src/.
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';

interface Entry {
  status: number;
  /** The `detail` text: a template whose `%s` are filled, in order, by the throw site's arguments. */
  message: string;
  /** What the code means, for docs/api-errors.md. */
  meaning: string;
}

const entry = (status: number, message: string, meaning: string): Entry => ({ status, message, meaning });

export const HTTP_ERRORS = {
  // Answered by the shared handler, whatever the route.
  HTTP_VALIDATION: entry(422, '%s', 'The request does not match the route schema: every problem is listed, `where.path message`, separated by `; `.'),
  HTTP_NO_ROUTE: entry(404, 'no route for %s %s', 'No route has this method and path.'),
  HTTP_BODY_TOO_LARGE: entry(413, '%s', 'The request body, an uploaded file or the number of uploaded files is over the limit named in the message.'),
  HTTP_UNSUPPORTED_MEDIA_TYPE: entry(
    415,
    '%s',
    'A content type the route does not take (multipart uploads, JSON, pipeline YAML as text/plain or application/yaml).',
  ),
  HTTP_DATABASE_UNAVAILABLE: entry(
    503,
    'database unavailable: %s; %s, then retry (GET /api/ready answers 200 once it is back)',
    'The database cannot be reached; the request was not carried out and may be retried (`Retry-After: 5`).',
  ),
  HTTP_INTERNAL: entry(500, 'internal error: %s', 'An unexpected failure of the daemon (a bug): the message is logged with its stack.'),
  HTTP_STANDBY: entry(
    503,
    'this manager is a standby: %s; send requests to the leader (the Service does, since a standby is not ready)',
    'A standby manager refuses the API until it leads and is ready (`Retry-After: 3`).',
  ),
  HTTP_UI_NOT_BUILT: entry(
    404,
    'the web UI is not built: no index.html in %s (run npm run build, or set SVC_UI_DIR)',
    'The web UI is not built or SVC_UI_DIR names no UI.',
  ),
  HTTP_REDOC_MISSING: entry(404, '%s', 'ReDoc (/redoc) is not installed beside the package; the Swagger UI at /docs shows the same API.'),
  HTTP_BAD_REQUEST: entry(400, '%s', 'A request that cannot be carried out as sent (see the message for what to change).'),
  HTTP_INVALID: entry(
    422,
    '%s',
    'A request field with a value the route does not take, beyond what its schema checks (an OID, a host, a date, a v3 user ...).',
  ),

  // Logins, sessions, API keys and rate limits.
  HTTP_API_KEY_INVALID: entry(401, '%s', 'The API key (X-API-Key) or session token is missing, wrong or sent as a query parameter.'),
  HTTP_RATE_LIMITED: entry(429, '%s', 'Too many requests from this client (SVC_RATE_LIMIT per SVC_RATE_LIMIT_WINDOW): wait the `Retry-After` seconds.'),
  HTTP_NOT_LOGGED_IN: entry(
    401,
    'not logged in: %s',
    'The API needs a bearer session token or an API key and the request has neither (`WWW-Authenticate: Bearer`).',
  ),
  HTTP_SESSION_INVALID: entry(401, '%s', 'The session token is invalid, expired or unknown: log in again.'),
  HTTP_LOGIN_FAILED: entry(401, '%s', 'Wrong username or password.'),
  HTTP_LOGIN_RATE_LIMITED: entry(429, '%s', 'Too many failed logins: wait the `Retry-After` seconds.'),
  HTTP_PASSWORD_WRONG: entry(401, '%s', 'A password change whose current password is wrong.'),
  HTTP_PASSWORD_CHANGE_INVALID: entry(400, '%s', "A password change that cannot be made (password too short, no SQL database for the API's users)."),
  HTTP_USER_EXISTS: entry(409, "user '%s' already exists", 'A console user of this name already exists.'),

  // Pipelines, runs, placements, alerts, dead letters, transform state.
  HTTP_PIPELINE_NOT_FOUND: entry(404, '%s', 'No pipeline of this name (or it was deleted meanwhile).'),
  HTTP_PIPELINE_VERSION_NOT_FOUND: entry(404, '%s', 'The pipeline has no version of this number.'),
  HTTP_PIPELINE_INVALID: entry(
    400,
    '%s',
    'The pipeline YAML is missing or does not validate (the configuration diagnostics are listed), or does not fit the operation (a manual run of a stream, a rename in place).',
  ),
  HTTP_PIPELINE_CONFLICT: entry(
    409,
    '%s',
    'The pipeline is already registered (use PUT to replace it), or has a run in progress, queued, being replayed or waiting to restart, or its dead letters are replayed on workers (a standalone daemon replays them).',
  ),
  HTTP_NO_WORKER: entry(503, '%s', 'No healthy worker can take the run and queueing is off (SVC_QUEUE_MANUAL_RUNS=0).'),
  HTTP_RUN_NOT_FOUND: entry(404, "run '%s' not found", 'No run of this id.'),
  HTTP_RUN_SUPERSEDED: entry(409, "run '%s' is superseded (%s): stop it", 'A worker reports on a run the manager has given up or given to another worker.'),
  HTTP_PLACEMENT_NOT_FOUND: entry(404, '%s', 'The pipeline is not a stream, or the stream has no active placement.'),
  HTTP_SHARDS_NOT_FOUND: entry(404, '%s', 'The pipeline is not a sharded batch pipeline (pipeline.workers on a source that can split).'),
  HTTP_NOT_A_MANAGER: entry(404, '%s', 'A worker callback sent to a node that is not a manager.'),
  HTTP_ALERT_RULE_INVALID: entry(422, '%s', 'An alert rule that does not validate.'),
  HTTP_ALERT_RULE_EXISTS: entry(409, '%s', 'The pipeline already has an alert rule of this name.'),
  HTTP_ALERT_RULE_NOT_FOUND: entry(404, "pipeline '%s' has no alert rule '%s'", 'The pipeline has no alert rule of this name.'),
  HTTP_DLQ_UNREADABLE: entry(409, '%s', 'The dead letters cannot be read as stored (a sink whose dead letters are not replayable).'),
  HTTP_DLQ_READ_FAILED: entry(502, '%s', 'The dead-letter store failed while being read.'),
  HTTP_DLQ_EXPRESSION_INVALID: entry(422, 'set: %s', 'A `set` expression of a replay that does not compile.'),
  HTTP_TRANSFORMS_STATELESS: entry(404, '%s', 'Stateful transforms are disabled on this node (SVC_STATEFUL_TRANSFORMS=0).'),
  HTTP_TRANSFORM_STATE_INVALID: entry(400, '%s', 'A transform state that names no stateful transform of the pipeline, or that is not usable.'),

  // Webhooks and the cluster's workers.
  HTTP_WEBHOOK_NOT_FOUND: entry(404, 'no webhook source is registered for /webhooks/%s', 'No running webhook source serves this path.'),
  HTTP_WEBHOOK_UNAUTHORIZED: entry(
    401,
    'missing or wrong bearer token: send Authorization: Bearer <secret of the webhook source>',
    'The webhook source needs its bearer secret.',
  ),
  HTTP_WEBHOOK_REFUSED: entry(
    400,
    'the body for /webhooks/%s was refused: %s',
    'A body the webhook source cannot take (a remote-write body that is not snappy protobuf): the sender drops it.',
  ),
  HTTP_WEBHOOK_UNAVAILABLE: entry(503, '%s', 'The body could not be stored, or the queue of the path is full: retry after `Retry-After` seconds.'),
  HTTP_EPOCH_INVALID: entry(400, '%s must be a non-negative integer', 'A call to a worker with an epoch header that is not a non-negative integer.'),
  HTTP_EPOCH_SUPERSEDED: entry(
    409,
    'epoch %s is lower than %s: this manager is no longer the leader',
    'A call to a worker from a manager that is no longer the leader (fencing).',
  ),
  HTTP_WORKER_UNAVAILABLE: entry(503, '%s', 'The worker is shutting down, or cannot sync the schemas and MIBs the run needs from the manager.'),
  HTTP_RUN_NOT_ACTIVE: entry(404, '%s', 'No active run of this id or pipeline on the worker.'),

  // Plugins, connectors, schemas, AI assist.
  HTTP_PLUGIN_NOT_FOUND: entry(404, '%s', 'No plugin of this kind and key.'),
  HTTP_CONNECTOR_INVALID: entry(400, '%s', 'A connector config that names no registered connector or does not validate.'),
  HTTP_SCHEMA_FILE_INVALID: entry(400, '%s', 'A schema file path or name that is refused (traversal, too long, hidden, wrong extension, reserved folder).'),
  HTTP_SCHEMA_FILE_NOT_FOUND: entry(404, '%s', 'No schema file at this path.'),
  HTTP_SCHEMA_FILE_CONFLICT: entry(409, '%s', 'The schema file path is taken by a folder, or a folder of it is a file.'),
  HTTP_SCHEMA_REGISTRY_UNSET: entry(503, '%s', 'No schema registry is configured (SVC_SCHEMA_REGISTRY_URL), or its settings are wrong.'),
  HTTP_SCHEMA_REGISTRY_PATH_INVALID: entry(400, '%s', 'A schema registry path that the proxy refuses.'),
  HTTP_SCHEMA_REGISTRY_UNREACHABLE: entry(502, '%s', 'The schema registry cannot be reached.'),
  HTTP_AI_OFF: entry(503, '%s', 'AI assist is off: no SVC_AI_API_KEY.'),
  HTTP_AI_PROVIDER_FAILED: entry(502, '%s', 'The AI provider failed, answered an error or did not answer in time.'),
  HTTP_AI_NO_PIPELINE: entry(422, '%s', 'The AI provider did not produce a valid pipeline.'),

  // MIBs.
  HTTP_MIB_NOT_FOUND: entry(404, '%s', 'No MIB module, source, source group or node of this name or OID in the active bundle.'),
  HTTP_MIB_REPOSITORY_UNSET: entry(503, '%s', 'A MIB module to fetch is not stored and no online repository is configured (SVC_MIB_REPOSITORY_URL).'),
  HTTP_MIB_REPOSITORY_FAILED: entry(502, '%s', 'The online MIB repository failed for every module asked.'),
  HTTP_MIB_SOURCE_READ_ONLY: entry(403, '%s', 'A bundled MIB source is read-only: upload a module of the same name to shadow it.'),
  HTTP_MIB_SOURCE_SHARED: entry(409, '%s', 'Deleting the module would delete other modules defined in the same file.'),
  HTTP_MIB_UPLOAD_INVALID: entry(
    400,
    '%s',
    'A MIB upload or source path that is refused (no file, a bad or hidden name, an empty file, a file given twice, a bad source group).',
  ),
  HTTP_MIB_OVER_LIMIT: entry(422, '%s', 'An uploaded MIB module is over a compile limit: nothing was stored.'),
  HTTP_MIB_UPLOAD_TYPE: entry(415, '%s', 'A MIB source name without one of the accepted extensions.'),
  HTTP_MIB_STORE_UNWRITABLE: entry(503, '%s', 'The MIB source folder cannot be written (SVC_MIB_SOURCE_DIR).'),
  HTTP_MIB_EXPORT_INVALID: entry(422, '%s', 'A MIB export request with an unknown format or type, or too large.'),

  // The console's SNMP tools.
  HTTP_SERVICE_STATE: entry(409, '%s', 'The simulator, fleet or trap receiver is already running, not running, or starting or stopping.'),
  HTTP_SERVICE_BUSY: entry(429, '%s', 'Too many walks already running: try again when one finishes.'),
  HTTP_HOST_UNRESOLVED: entry(400, '%s', 'A host name that does not resolve.'),
  HTTP_SNMP_UNREACHABLE: entry(502, '%s', 'The SNMP agent cannot be reached (ICMP port unreachable, no route to the host).'),
  HTTP_SNMP_AGENT_ERROR: entry(502, '%s', 'The SNMP agent answered with an error status or a report (a v3 USM error, a refused request).'),
  HTTP_SNMP_TIMEOUT: entry(504, '%s', 'The SNMP agent did not answer in time, after all retries (or did not acknowledge an inform).'),
} as const satisfies Record<string, Entry>;

export type HttpErrorCode = keyof typeof HTTP_ERRORS;

/** The one HTTP error: thrown with a catalog code; the handler answers `{detail: message}` with its status. */
export class HttpError extends Error {
  override name = 'HttpError';
  readonly statusCode: number;
  constructor(
    readonly code: HttpErrorCode,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.statusCode = HTTP_ERRORS[code].status;
  }
}

/** Fills `%s` in order; extra arguments are ignored, missing ones leave an empty string. */
function fill(template: string, args: readonly unknown[]): string {
  let i = 0;
  return template.replace(/%s/g, () => String(args[i++] ?? ''));
}

/** The catalog's error `code` with its message filled by `args`. */
export function httpError(code: HttpErrorCode, ...args: unknown[]): HttpError {
  return new HttpError(code, fill(HTTP_ERRORS[code].message, args));
}

/** The same, answered with extra headers (Retry-After, WWW-Authenticate). */
export function httpErrorWith(headers: Record<string, string>, code: HttpErrorCode, ...args: unknown[]): HttpError {
  return new HttpError(code, fill(HTTP_ERRORS[code].message, args), headers);
}

interface Log {
  error(obj: object, msg: string): void;
}

export interface ErrorHandlerOptions {
  /** Where unexpected errors (500) are logged with their stack, and under which message. */
  log?: Log;
  logMessage?: string;
  /** The body limit of the route at `url`: a body over it is answered in these words (else Fastify's message). */
  bodyLimit?(url: string): number;
  /** What to send instead of an unsupported content type (else Fastify's message). */
  mediaTypeHint?(contentType: string | undefined): string;
  /** Answers a failure that is neither the catalog's nor a 4xx before it becomes a 500 (the API's database unavailable); true when answered. */
  unexpected?(err: Error, req: FastifyRequest, reply: FastifyReply): boolean;
  /** Fastify's own message for validation and unexpected errors, unlogged (the worker's agent: its caller, the manager, logs it). */
  plain?: boolean;
}

/** A validation error's detail: each problem `where.path message`, joined by `; `. */
export function validationDetail(err: FastifyError): string {
  const where = err.validationContext ?? 'request';
  return err.validation!.map((v) => `${where}${v.instancePath ? v.instancePath.replace(/\//g, '.') : ''} ${v.message ?? 'is invalid'}`).join('; ');
}

/** The one error handler: catalog errors, validation errors, Fastify's 4xx and unexpected errors, each as `{detail}`. */
export function httpErrorHandler(opts: ErrorHandlerOptions = {}) {
  return (err: FastifyError, req: FastifyRequest, reply: FastifyReply) => {
    if (err instanceof HttpError) return sendHttpError(reply, err);
    if (err.validation) return reply.code(HTTP_ERRORS.HTTP_VALIDATION.status).send({ detail: opts.plain ? err.message : validationDetail(err) });
    if (err.statusCode && err.statusCode < 500) {
      const detail =
        err.code === 'FST_ERR_CTP_BODY_TOO_LARGE' && opts.bodyLimit
          ? `request body is larger than the limit of ${opts.bodyLimit(req.url)} bytes`
          : err.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE' && opts.mediaTypeHint
            ? opts.mediaTypeHint(req.headers['content-type'])
            : err.message;
      return reply.code(err.statusCode).send({ detail });
    }
    if (opts.unexpected?.(err, req, reply)) return reply;
    if (opts.plain) return reply.code(HTTP_ERRORS.HTTP_INTERNAL.status).send({ detail: err.message });
    opts.log?.error({ err: err.message, stack: err.stack, url: req.url }, opts.logMessage ?? 'request failed');
    return reply.code(HTTP_ERRORS.HTTP_INTERNAL.status).send({ detail: fill(HTTP_ERRORS.HTTP_INTERNAL.message, [err.message]) });
  };
}

/** Answers `err` at once, as the handler would (hooks and routes that reply rather than throw). */
export function sendHttpError(reply: FastifyReply, err: HttpError) {
  return reply.code(err.statusCode).headers(err.headers).send({ detail: err.message });
}

/** The one not-found handler: `{detail: "no route for GET /path"}`. */
export function noRouteHandler(req: FastifyRequest, reply: FastifyReply) {
  return reply.code(HTTP_ERRORS.HTTP_NO_ROUTE.status).send({ detail: fill(HTTP_ERRORS.HTTP_NO_ROUTE.message, [req.method, req.url.split('?')[0]]) });
}
