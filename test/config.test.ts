import t from 'tap';
import { fileURLToPath } from 'node:url';
import { ConfigError, loadConfig, publicUrl, readDefaults, settings } from '../src/config.ts';

const problems = (env: NodeJS.ProcessEnv, defaults?: Record<string, unknown>): string[] => {
  try {
    loadConfig(env, defaults);
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  return [];
};

t.test('defaults load and are typed', async (t) => {
  const c = loadConfig({});
  t.equal(c.PORT, 3000);
  t.equal(c.DATABASE_URL, '');
  t.equal(c.DATA_DIR, fileURLToPath(new URL('../data', import.meta.url)), "the project's data folder, wherever the process runs");
  t.equal(loadConfig({ DATA_DIR: './mine' }).DATA_DIR, './mine', 'one set in the environment stays relative to the working directory');
  t.equal(c.ALLOW_CREATE_CURRENCY, false);
  t.equal(c.CHANNEL_SAFETY_BUFFER, '0', 'decimals stay strings');
});

t.test('every setting has a default and every default is a known setting', async (t) => {
  t.same(Object.keys(readDefaults()).sort(), Object.keys(settings).sort());
});

t.test('environment overrides defaults', async (t) => {
  const c = loadConfig({ PORT: '8080', LOG_LEVEL: 'debug', ALLOW_CREATE_CURRENCY: 'true', DATABASE_URL: 'postgres://u@h/db' });
  t.equal(c.PORT, 8080);
  t.equal(c.LOG_LEVEL, 'debug');
  t.equal(c.ALLOW_CREATE_CURRENCY, true);
  t.equal(c.DATABASE_URL, 'postgres://u@h/db');
});

t.test('each kind of bad value names the setting, the value and what is allowed', async (t) => {
  const cases: [NodeJS.ProcessEnv, RegExp][] = [
    [{ PORT: 'abc' }, /^PORT = "abc" is not valid: expected an integer from 0 to 65535$/],
    [{ PORT: '70000' }, /^PORT = "70000" .*integer from 0 to 65535/],
    [{ PORT: '1.5' }, /^PORT = "1.5" .*integer/],
    [{ PORT: '' }, /^PORT = "" .*integer/],
    [{ LOG_LEVEL: 'loud' }, /^LOG_LEVEL = "loud" .*one of fatal, error, warn, info, debug, trace, silent/],
    [{ DATABASE_URL: 'mysql://x' }, /^DATABASE_URL = "mysql:\/\/x" .*postgres:\/\//],
    [{ PUBLIC_URL: 'not a url' }, /^PUBLIC_URL = "not a url" .*http\(s\) URL/],
    [{ ALLOW_CREATE_CURRENCY: 'maybe' }, /^ALLOW_CREATE_CURRENCY = "maybe" .*true or false/],
    [{ SANDBOX: 'sometimes' }, /^SANDBOX .*one of auto, on, off/],
    [{ ROLES: 'receiver,chef' }, /^ROLES .*receiver, worker, console/],
    [{ CHANNEL_SAFETY_BUFFER: '-1' }, /^CHANNEL_SAFETY_BUFFER .*non-negative decimal/],
    [{ CHANNEL_LOCATIONS: '1,x' }, /^CHANNEL_LOCATIONS .*location ids/],
    [{ FULL_SWEEP_CRON: 'daily' }, /^FULL_SWEEP_CRON .*cron/],
    [{ TOKEN_ENCRYPTION_KEY: 'short' }, /^TOKEN_ENCRYPTION_KEY = \(hidden\) .*32 bytes/],
    [{ OPERATOR_TOKEN: 'letmein' }, /^OPERATOR_TOKEN = \(hidden\) is not valid: expected .*at least 24 characters/],
    [{ OPERATOR_TOKEN: 'x'.repeat(23) }, /^OPERATOR_TOKEN .*at least 24 characters/],
  ];
  for (const [env, re] of cases) {
    const p = problems(env);
    t.equal(p.length, 1, `one problem for ${JSON.stringify(env)}`);
    t.match(p[0], re);
  }
});

t.test('secrets are never echoed back', async (t) => {
  const p = problems({ TOKEN_ENCRYPTION_KEY: 'sekrit-value' });
  t.notMatch(p.join('\n'), /sekrit/);
});

t.test('a placeholder or a published secret is refused, naming the setting and how to make one', async (t) => {
  // The secrets of deploy/kubernetes/secret.yaml and of 0.2.0's deploy/.env, as shipped.
  const p = problems({
    DATABASE_URL: 'postgres://commerce_sync:replace-me@postgres:5432/commerce_sync',
    COMMERCE_CLIENT_SECRET: 'replace-me',
    TOKEN_ENCRYPTION_KEY: 'lEzQip2Xcf8B+nsMS2NhksO8KWV2P8qc+wDNeyL19qw=',
    OPERATOR_TOKEN: 'demo-operator-token-replace-me',
    CHANNEL_WEBHOOK_SECRET: 'whsec_6NMuqwFRYFJKZ12dBwMsZcFwvYFdBPZAVlm/WgUsbU8=',
    ALERT_WEBHOOK_SECRET: 'REPLACE-ME',
  });
  t.same(p, [
    'DATABASE_URL holds the placeholder replace-me: set it to a URL with the password of your database user (openssl rand -hex 24 makes one)',
    'COMMERCE_CLIENT_SECRET holds the placeholder replace-me: set it to the client secret the service issued your application (for a sandbox, any: openssl rand -hex 24)',
    "TOKEN_ENCRYPTION_KEY is a secret published in 0.2.0's deploy/.env: set it to a key of your own, and keep it: openssl rand -base64 32",
    "CHANNEL_WEBHOOK_SECRET is a secret published in 0.2.0's deploy/.env: set it to a secret of your own: echo whsec_$(openssl rand -base64 32)",
    'OPERATOR_TOKEN holds the placeholder replace-me: set it to a token of your own: openssl rand -hex 24',
    'ALERT_WEBHOOK_SECRET holds the placeholder replace-me: set it to a secret of your own: echo whsec_$(openssl rand -base64 32)',
  ]);
  t.match(problems({ OIDC_CLIENT_SECRET: 'replace-me' }), [
    'OIDC_CLIENT_SECRET holds the placeholder replace-me: set it to a value of your own',
  ]);
  t.same(problems({ OPERATOR_TOKEN: 'x'.repeat(48), COMMERCE_CLIENT_SECRET: 'replace' }), [], 'a value of ones own passes');
});

t.test('all problems are reported together', async (t) => {
  t.equal(problems({ PORT: 'x', LOG_LEVEL: 'y', WORKER_CONCURRENCY: '0' }).length, 3);
});

t.test('missing and unknown settings in the defaults file', async (t) => {
  const defaults = readDefaults();
  delete defaults.PORT;
  defaults.NOPE = 1;
  const p = problems({}, defaults);
  t.ok(p.some((l) => /^PORT is missing/.test(l)));
  t.ok(p.some((l) => /unknown setting NOPE/.test(l)));
});

t.test('publicUrl derives from the bound port unless PUBLIC_URL is set', async (t) => {
  t.equal(publicUrl(loadConfig({}), 4321), 'http://127.0.0.1:4321');
  t.equal(publicUrl(loadConfig({ HOST: '0.0.0.0' }), 5), 'http://127.0.0.1:5');
  t.equal(publicUrl(loadConfig({ PUBLIC_URL: 'https://sync.example.com/' }), 5), 'https://sync.example.com');
});
