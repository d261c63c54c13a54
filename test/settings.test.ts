import { describe, expect, it } from 'vitest';
import { loadSettings, SettingsError } from '../src/settings.js';

describe('settings (SVC_*)', () => {
  it('has the defaults of spec doc 2', () => {
    const s = loadSettings({});
    expect(s).toMatchObject({
      HOST: '0.0.0.0',
      PORT: 8765,
      PIPELINE_DIR: './pipelines',
      DB_URL: '',
      SHUTDOWN_TIMEOUT_SECONDS: 30,
      API_URL: 'http://localhost:8765',
      LOG_LEVEL: 'INFO',
      LOG_FORMAT: 'json',
      RELOAD_ON_START: true,
      SMTP_HOST: 'localhost',
      SMTP_PORT: 587,
      SMTP_TLS: true,
      API_KEY: '',
      INTERNAL_AUTH_MODE: 'warn',
      WEBHOOK_MAX_BODY_BYTES: 10485760,
      AUTH_USERS: [],
      RATE_LIMIT: 0,
      RATE_LIMIT_WINDOW: 60,
      WATCH_PIPELINES: false,
      MODE: 'standalone',
      WORKER_PORT: 8766,
      WORKER_INGRESS_PORT: 8767,
      STATS_INTERVAL: 30,
      QUEUE_TTL_SECONDS: 900,
      STATEFUL_TRANSFORMS: true,
      STATE_MAX_BYTES: 20971520,
    });
    expect(s.DB_PATH).toMatch(/\.svc[\\/]svc\.db$/);
    expect(s.AUTH_SECRET).toMatch(/^[0-9a-f]{64}$/);
    expect(loadSettings({}).AUTH_SECRET).not.toBe(s.AUTH_SECRET);
  });

  it('parses typed values', () => {
    const s = loadSettings({
      SVC_PORT: '9000',
      SVC_SMTP_TLS: 'false',
      SVC_AUTH_USERS: 'ops:pw1, admin:p:w',
      SVC_LOG_LEVEL: 'debug',
      SVC_WATCH_PIPELINES: 'yes',
    });
    expect(s).toMatchObject({ PORT: 9000, SMTP_TLS: false, AUTH_USERS: ['ops:pw1', 'admin:p:w'], LOG_LEVEL: 'DEBUG', WATCH_PIPELINES: true });
  });

  it("the CLI's daemon URL: SVC_API_URL, else the daemon's own SVC_HOST and SVC_PORT (localhost for every interface)", () => {
    expect(loadSettings({ SVC_PORT: '9000' }).API_URL).toBe('http://localhost:9000');
    expect(loadSettings({ SVC_PORT: '9000', SVC_HOST: '0.0.0.0' }).API_URL).toBe('http://localhost:9000');
    expect(loadSettings({ SVC_PORT: '9000', SVC_HOST: '::' }).API_URL).toBe('http://localhost:9000');
    expect(loadSettings({ SVC_PORT: '9000', SVC_HOST: '10.1.2.3' }).API_URL).toBe('http://10.1.2.3:9000');
    expect(loadSettings({ SVC_HOST: '::1' }).API_URL).toBe('http://[::1]:8765');
    expect(loadSettings({ SVC_PORT: '9000', SVC_API_URL: 'http://daemon:1234' }).API_URL).toBe('http://daemon:1234');
    expect(loadSettings({ SVC_PORT: '9000', SVC_API_URL: '' }).API_URL).toBe('http://localhost:9000');
  });

  it.each([
    ['SVC_PORT', 'eighty', 'SVC_PORT="eighty": expected an integer'],
    ['SVC_PORT', '70000', 'SVC_PORT=70000: must be between 0 and 65535'],
    ['SVC_RELOAD_ON_START', 'maybe', 'SVC_RELOAD_ON_START="maybe": expected true or false'],
    ['SVC_LOG_FORMAT', 'xml', 'SVC_LOG_FORMAT="xml": must be one of json, text'],
    ['SVC_MODE', 'cluster', 'SVC_MODE="cluster": must be one of standalone, manager, worker'],
  ])('a bad %s is a one-line error naming the variable', (name, value, message) => {
    expect(() => loadSettings({ [name]: value })).toThrow(SettingsError);
    expect(() => loadSettings({ [name]: value })).toThrow(message);
  });

  it('treats an invalid SVC_INTERNAL_AUTH_MODE as warn and remembers it for a warning', () => {
    const s = loadSettings({ SVC_INTERNAL_AUTH_MODE: 'strict' });
    expect(s.INTERNAL_AUTH_MODE).toBe('warn');
    expect(s.invalidInternalAuthMode).toBe('strict');
    expect(loadSettings({ SVC_INTERNAL_AUTH_MODE: 'ENFORCE' }).INTERNAL_AUTH_MODE).toBe('enforce');
  });

  it('counts unrecognised values of the 0/1 switches as 1', () => {
    expect(loadSettings({ SVC_QUEUE_MANUAL_RUNS: '0', SVC_STATEFUL_TRANSFORMS: 'off' })).toMatchObject({ QUEUE_MANUAL_RUNS: false, STATEFUL_TRANSFORMS: true });
  });
});
