// Login, logout, token check, credential rotation and application settings (spec doc 1 section 5).
import { Type } from '@sinclair/typebox';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { LoginFailureLimiter } from '../../auth/rate-limit.js';
import { httpError, httpErrorWith } from '../../core/http-errors.js';
import { AppSettingsPatchSchema, AppSettingsSchema, type AppSettings } from '../app-settings.js';
import { MIN_PASSWORD_LENGTH } from '../credentials.js';
import type { ConsoleDeps } from '../deps.js';

const tags = ['settings'];
const Login = Type.Object({ username: Type.String({ minLength: 1 }), password: Type.String({ minLength: 1 }) });
const LoginResponse = Type.Object({
  token: Type.String({ description: 'Send it as X-Auth-Token on every authenticated request, and as ?token= on the WebSocket.' }),
  username: Type.String(),
  expires_at: Type.String({ description: 'ISO 8601; sessions last 8 hours.' }),
});
const Rotate = Type.Object(
  {
    current_password: Type.String({ minLength: 1 }),
    new_password: Type.String({ minLength: MIN_PASSWORD_LENGTH }),
    new_username: Type.Optional(Type.String({ minLength: 1, maxLength: 64, pattern: '^[^:\\s]+$' })),
  },
  { additionalProperties: false },
);

export default async function settingsRoutes(app: FastifyInstance, deps: ConsoleDeps) {
  const { credentials, sessions, appSettings } = deps;
  // Failed logins per client address (SVC_AUTH_LOGIN_MAX_FAILURES per SVC_AUTH_LOGIN_WINDOW_SECONDS), then 429.
  const failures = new LoginFailureLimiter(deps.settings.AUTH_LOGIN_MAX_FAILURES, deps.settings.AUTH_LOGIN_WINDOW_SECONDS);

  app.post(
    '/api/settings/login',
    { schema: { tags, body: Login, response: { 200: LoginResponse }, summary: 'Log in: a session token (unauthenticated)' } },
    async (req: FastifyRequest<{ Body: { username: string; password: string } }>) => {
      const { username, password } = req.body;
      const r = await failures.attempt(req.ip, () => credentials.verify(username, password));
      if (r.outcome === 'limited') throw httpErrorWith({ 'retry-after': String(r.retryAfterSeconds) }, 'HTTP_LOGIN_RATE_LIMITED', r.detail);
      if (r.outcome === 'wrong') throw httpError('HTTP_SESSION_INVALID', 'wrong username or password');
      const s = sessions.issue(username);
      return { token: s.token, username, expires_at: new Date(s.expiresAt).toISOString() };
    },
  );

  app.post('/api/settings/logout', { schema: { tags, summary: 'End this session' } }, async (req) => {
    sessions.revoke(String(req.headers['x-auth-token']));
    return { ok: true };
  });

  app.get('/api/settings/check', { schema: { tags, summary: 'Is the token valid? (401 when not)' } }, async (req) => {
    const s = authenticated(deps, req);
    return { valid: true, username: s.username, expires_at: new Date(s.expiresAt).toISOString() };
  });

  app.post(
    '/api/settings/auth',
    { schema: { tags, body: Rotate, summary: "Rotate this user's password (and optionally name); stored hashed; ends the user's sessions" } },
    async (req: FastifyRequest<{ Body: { current_password: string; new_password: string; new_username?: string } }>) => {
      const s = authenticated(deps, req);
      const username = await credentials.rotate(s.username, req.body.current_password, req.body.new_password, req.body.new_username);
      sessions.revokeUser(s.username);
      return { ok: true, username };
    },
  );

  app.get('/api/settings/app', { schema: { tags, response: { 200: AppSettingsSchema }, summary: 'Application settings' } }, async () => appSettings.get());

  app.post(
    '/api/settings/app',
    { schema: { tags, body: AppSettingsPatchSchema, response: { 200: AppSettingsSchema }, summary: 'Update some application settings' } },
    async (req: FastifyRequest<{ Body: Partial<AppSettings> }>) => appSettings.update(req.body),
  );
}

/** The session the auth hook found; a route that is reached without one is a 401, never a crash. */
function authenticated(deps: ConsoleDeps, req: FastifyRequest) {
  const s = deps.session(req);
  if (!s) throw httpError('HTTP_SESSION_INVALID', 'missing, expired or unknown X-Auth-Token: log in with POST /api/settings/login');
  return s;
}
