// Browser login (spec doc 2 sections 4 and 5): POST /api/auth/login, GET /api/auth/me,
// POST /api/auth/change-password. Passwords are checked against the stored hash when the user has
// one (set by change-password), else against the SVC_AUTH_USERS bootstrap list.
import { Type, type Static } from '@sinclair/typebox';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { hashPassword, parseAuthUsers, verifyPassword } from '../../auth/passwords.js';
import { LoginFailureLimiter } from '../../auth/rate-limit.js';
import { bearerToken, issueToken, verifyToken } from '../../auth/tokens.js';
import type { Store } from '../../store/types.js';
import type { ApiDeps } from '../deps.js';
import { httpError, httpErrorWith } from '../../core/http-errors.js';

/** What these routes use of ApiDeps (any ApiDeps fits). */
export type AuthRouteDeps = Pick<ApiDeps, 'settings' | 'log'> & { store: Pick<Store, 'users'> };

const LoginBody = Type.Object({
  username: Type.String({ minLength: 1, maxLength: 255 }), // the users table's name column
  password: Type.String({ maxLength: 1024 }),
});
const ChangePasswordBody = Type.Object({
  current_password: Type.String({ maxLength: 1024 }),
  new_password: Type.String({ minLength: 1, maxLength: 1024 }),
});
const Detail = Type.Object({ detail: Type.String() });
const LoginReply = Type.Object({ token: Type.String(), username: Type.String() });
const MeReply = Type.Object({ username: Type.String() });
const ChangePasswordReply = Type.Object({ ok: Type.Boolean(), username: Type.String() });

const BEARER_HINT = 'send Authorization: Bearer <token> with a token from POST /api/auth/login';

export default async function authRoutes(app: FastifyInstance, deps: AuthRouteDeps): Promise<void> {
  const { settings, log, store } = deps;

  // Bootstrap passwords are hashed once here, so every login costs exactly one scrypt
  // verification whether the user is stored, bootstrapped or unknown (no timing difference).
  const { users, warnings } = parseAuthUsers(settings.AUTH_USERS);
  for (const w of warnings) log.warn({ variable: 'SVC_AUTH_USERS' }, w);
  const bootstrap = new Map<string, string>();
  for (const [user, password] of users) bootstrap.set(user, await hashPassword(password));
  const unknownUserHash = await hashPassword('unknown user: this never matches anything');
  // Password guessing: past SVC_AUTH_LOGIN_MAX_FAILURES a client is refused before the check
  // (SVC_RATE_LIMIT, when set, counts every request on top of this).
  const failures = new LoginFailureLimiter(settings.AUTH_LOGIN_MAX_FAILURES, settings.AUTH_LOGIN_WINDOW_SECONDS);

  async function passwordMatches(username: string, password: string): Promise<boolean> {
    const stored = await store.users.passwordHash(username);
    const hash = stored ?? bootstrap.get(username);
    const ok = await verifyPassword(password, hash ?? unknownUserHash);
    return ok && hash !== undefined;
  }

  function sessionUser(request: FastifyRequest): string {
    const token = bearerToken(request.headers.authorization);
    if (token === undefined) throw httpErrorWith({ 'www-authenticate': 'Bearer' }, 'HTTP_NOT_LOGGED_IN', BEARER_HINT);
    const user = verifyToken(token, settings.AUTH_SECRET);
    if (user === undefined)
      throw httpErrorWith({ 'www-authenticate': 'Bearer' }, 'HTTP_SESSION_INVALID', 'invalid or expired session token: log in again with POST /api/auth/login');
    return user;
  }

  app.post<{ Body: Static<typeof LoginBody> }>(
    '/api/auth/login',
    {
      schema: {
        tags: ['auth'],
        summary: 'Log in with a user name and password; returns a session token valid 8 hours',
        body: LoginBody,
        response: { 200: LoginReply, 401: Detail, 429: Detail },
      },
    },
    async (request) => {
      const { username, password } = request.body;
      const r = await failures.attempt(request.ip, () => passwordMatches(username, password));
      if (r.outcome === 'limited') {
        log.info({ username, ip: request.ip }, 'login refused: too many failed logins');
        throw httpErrorWith({ 'retry-after': String(r.retryAfterSeconds) }, 'HTTP_LOGIN_RATE_LIMITED', r.detail);
      }
      if (r.outcome === 'wrong') {
        log.info({ username, ip: request.ip }, 'login refused');
        throw httpError('HTTP_LOGIN_FAILED', 'invalid username or password');
      }
      return { token: issueToken(username, settings.AUTH_SECRET), username };
    },
  );

  app.get(
    '/api/auth/me',
    {
      schema: {
        tags: ['auth'],
        summary: 'The user of the session token',
        response: { 200: MeReply, 401: Detail },
      },
    },
    async (request) => ({ username: sessionUser(request) }),
  );

  app.post<{ Body: Static<typeof ChangePasswordBody> }>(
    '/api/auth/change-password',
    {
      schema: {
        tags: ['auth'],
        summary: 'Change the password of the logged-in user (needs SVC_DB_URL)',
        body: ChangePasswordBody,
        response: { 200: ChangePasswordReply, 400: Detail, 401: Detail },
      },
    },
    async (request) => {
      const username = sessionUser(request);
      if (!settings.DB_URL) {
        throw httpError(
          'HTTP_PASSWORD_CHANGE_INVALID',
          'password changes need a SQL database: set SVC_DB_URL (passwords are not stored in the embedded database)',
        );
      }
      const { current_password, new_password } = request.body;
      if (!(await passwordMatches(username, current_password))) throw httpError('HTTP_PASSWORD_WRONG', 'current_password is wrong');
      await store.users.setPasswordHash(username, await hashPassword(new_password));
      log.info({ username }, 'password changed');
      return { ok: true, username };
    },
  );
}
