// Settings: config/default.json holds every default, environment variables override it.
// Validation reports every bad value at once, one line each, so a deploy is fixed in one go.
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';

const defaultsPath = fileURLToPath(new URL('../config/default.json', import.meta.url));
/** The project's folder (the package's), which a relative path in config/default.json is relative to. */
const projectRoot = fileURLToPath(new URL('..', import.meta.url));

const int = (min: number, max: number) => z.coerce.number().int().min(min).max(max).describe(`an integer from ${min} to ${max}`);
const bool = z
  .union([z.boolean(), z.enum(['true', 'false', '1', '0', 'yes', 'no'])])
  .transform((v) => v === true || v === 'true' || v === '1' || v === 'yes')
  .describe('true or false');
const url = (what: string) =>
  z.string().refine((v) => v === '' || (/^https?:\/\/[^\s]+$/.test(v) && URL.canParse(v)), {
    message: `an http(s) URL${what}`,
  });
/** A retention in days; fractions allowed, so a benchmark can run days of traffic in minutes. */
const days = z.coerce.number().positive().max(3650).describe('a number of days above 0, at most 3650 (fractions allowed: 0.5 is 12 hours)');
const decimal = z.string().regex(/^\d+(\.\d+)?$/, 'a non-negative decimal such as 0 or 2.5');

/** Standard Webhooks secrets: empty, or whsec_ secrets separated by spaces (src/channels/sender.ts). */
const whsecList = z
  .string()
  .refine((v) =>
    v
      .split(/[\s,]+/)
      .filter(Boolean)
      .every((s) => /^whsec_[A-Za-z0-9+/]{32,88}={0,2}$/.test(s)),
  )
  .describe('empty, or whsec_ and the base64 of 24 to 64 random bytes (several separated by spaces)');

export const settings = {
  DATABASE_URL: {
    schema: z.string().refine((v) => v === '' || /^postgres(ql)?:\/\//.test(v), 'a postgres:// URL, or empty'),
    doc: 'PostgreSQL to use. Empty: start an embedded PostgreSQL under DATA_DIR.',
    make: 'a URL with the password of your database user (openssl rand -hex 24 makes one)',
  },
  DATABASE_POOL_SIZE: {
    schema: int(2, 1000),
    doc: 'Most connections a long-running process opens for its own queries (one pool per process; docs/deploy.md counts them all).',
  },
  QUEUE_POOL_SIZE: { schema: int(2, 1000), doc: 'Most connections a long-running process opens for pg-boss.' },
  DATA_DIR: {
    schema: z.string().min(1, 'a folder path'),
    doc: "Where local state lives (embedded database, generated keys). The default is the project's `data` folder wherever a command runs; a relative path set in the environment is relative to the working directory.",
    path: true,
  },
  HOST: {
    schema: z.string().min(1, 'a host name or address'),
    doc: 'Address the HTTP server binds to; 0.0.0.0 to accept deliveries from outside.',
  },
  PORT: { schema: int(0, 65535), doc: 'Port of the HTTP server (receiver, console, health); 0 picks a free one.' },
  WORKER_PORT: {
    schema: z.union([z.literal(''), int(0, 65535)]).describe('an integer from 0 to 65535, or empty'),
    doc: 'Port a process running only workers serves /healthz, /readyz and /metrics on; 0 picks a free one. Empty: no HTTP server.',
  },
  PUBLIC_URL: {
    schema: url(', or empty'),
    doc: 'URL the service reaches us at; webhooks are registered at PUBLIC_URL/webhooks/NAME. Empty: http://HOST:PORT. Browsers reach the console at its host or at localhost only (DNS rebinding).',
  },
  HTTP_REQUEST_TIMEOUT_MS: {
    schema: int(1000, 600000),
    doc: 'Longest time a client may take to send a whole request (headers and body); slower ones are cut with 408.',
  },
  LOG_LEVEL: { schema: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']), doc: 'pino log level.' },
  ROLES: {
    schema: z
      .string()
      .regex(/^(receiver|worker|console)(,(receiver|worker|console))*$/, 'a comma-separated list of receiver, worker, console'),
    doc: 'Roles `start` runs in this process.',
  },
  SANDBOX: {
    schema: z.enum(['auto', 'on', 'off']),
    doc: 'auto: run the built-in sandbox when no connection exists; on: always; off: never.',
  },
  SANDBOX_PORT: { schema: int(0, 65535), doc: 'Port of the demo sandbox started by `start`; 0 picks a free one.' },
  SANDBOX_SEED: { schema: int(0, 2 ** 31 - 1), doc: 'Seed of the demo sandbox catalog.' },
  SANDBOX_VARIANTS: { schema: int(0, 1_000_000), doc: 'Number of variants the demo sandbox seeds.' },
  SANDBOX_ACTIVITY: {
    schema: z.coerce.number().min(0).max(1000).describe('a number from 0 to 1000'),
    doc: 'Merchant operations per second the demo sandbox performs.',
  },
  SANDBOX_HOST: { schema: z.string().min(1, 'a host name or address'), doc: 'Address `commerce-sync sandbox` binds to.' },
  SANDBOX_LOCATIONS: { schema: int(1, 1000), doc: 'Number of stock locations the sandbox seeds.' },
  SANDBOX_TOKEN: { schema: z.string().min(1, 'a non-empty token'), doc: 'Privileged access token the sandbox accepts.', secret: true },
  SANDBOX_CLIENT_SECRET: {
    schema: z.string().min(1, 'a non-empty secret'),
    doc: 'OAuth client secret of the sandbox; also its webhook signing key.',
    secret: true,
  },
  SANDBOX_ADMIN_TOKEN: {
    schema: z.string().min(1, 'a non-empty token'),
    doc: 'Bearer token of the sandbox admin API (/__sandbox/).',
    secret: true,
  },
  SANDBOX_TIME_SCALE: {
    schema: z.coerce.number().positive().max(1_000_000).describe('a positive number'),
    doc: 'Sandbox time runs this many times faster than real time (rate windows, token expiry, retry backoff).',
  },
  SANDBOX_RATE_LIMIT: { schema: int(1, 1_000_000), doc: 'Requests per rate window the sandbox allows per application and account.' },
  SANDBOX_RATE_WINDOW: { schema: int(1, 86400), doc: 'Length of the sandbox rate window in sandbox seconds.' },
  SANDBOX_PROFILE: {
    schema: z.enum(['spec', 'documented']),
    doc: 'spec: the sandbox behaves as the spec says; documented: as the real service is documented (docs/sandbox.md).',
  },
  COMMERCE_BASE_URL: { schema: url(', or empty'), doc: 'Base URL of a real account to connect at start (with COMMERCE_TOKEN).' },
  COMMERCE_SERVICE_HOSTS: {
    schema: z
      .string()
      .regex(
        /^\s*((\*\.)?[A-Za-z0-9.-]+(:\d{1,5})?)?(\s*,\s*(\*\.)?[A-Za-z0-9.-]+(:\d{1,5})?)*\s*$/,
        'comma-separated host names (host, host:port, *.domain), or empty',
      ),
    doc: "Hosts the console may connect accounts at (comma-separated; host, host:port, or *.domain for its subdomains), https only except on loopback. COMMERCE_BASE_URL's host and, in demo mode, the sandbox's are allowed too.",
  },
  COMMERCE_TOKEN: { schema: z.string(), doc: 'Privileged access token for COMMERCE_BASE_URL.', secret: true },
  COMMERCE_CLIENT_ID: { schema: z.string(), doc: 'OAuth client id of the registered application.' },
  COMMERCE_CLIENT_SECRET: {
    schema: z.string(),
    doc: 'OAuth client secret; also the webhook signing key. Empty: generated under DATA_DIR (demo only).',
    secret: true,
    make: 'the client secret the service issued your application (for a sandbox, any: openssl rand -hex 24)',
  },
  COMMERCE_CLIENT_SECRET_PREVIOUS: {
    schema: z.string(),
    doc: 'Previous client secret, still accepted on deliveries during rotation.',
    secret: true,
  },
  TOKEN_ENCRYPTION_KEY: {
    schema: z
      .string()
      .refine((v) => v === '' || Buffer.from(v, 'base64').length === 32, '32 bytes in base64 (openssl rand -base64 32), or empty'),
    doc: 'AES-256-GCM key for tokens at rest. Empty: generated into DATA_DIR/secret.key.',
    secret: true,
    make: 'a key of your own, and keep it: openssl rand -base64 32',
  },
  IDEMPOTENCY_HEADER: {
    schema: z.string().regex(/^[A-Za-z0-9_-]+$/, 'an HTTP header name'),
    doc: 'Header that carries idempotency keys on POST and PUT.',
  },
  API_CONCURRENCY: { schema: int(1, 64), doc: 'Requests in flight per process and connection.' },
  API_MAX_URI_LENGTH: { schema: int(256, 65536), doc: 'Longest request URI the client sends; longer id lists are split.' },
  API_MAX_ATTEMPTS: { schema: int(1, 20), doc: 'Attempts for a request failing with 500/502/504 or a network error.' },
  API_TIMEOUT_MS: { schema: int(100, 600000), doc: 'Timeout of one API request.' },
  BUDGET_RESERVE: {
    schema: int(0, 299),
    doc: 'Requests per window that background reconciliation, and delivery-driven reads of documents and reference data, may not take (at most half the window): the end of a window is kept for stock reads and pushes.',
  },
  WEBHOOK_BODY_LIMIT: { schema: int(1024, 64 * 1024 * 1024), doc: 'Largest delivery body accepted (bytes); larger gets 413.' },
  WEBHOOK_MAX_FUTURE_SECONDS: {
    schema: int(0, 86400),
    doc: "A delivery whose timestamp is further ahead of this machine's clock gets 400 (the service retries it later), as does one older than the service retries (3 days + 1 hour). 0: timestamps are not checked (a sandbox whose clock runs fast).",
  },
  WEBHOOK_BATCH_SIZE: { schema: int(1, 5000), doc: 'Most deliveries the receiver stores in one transaction (group commit).' },
  WEBHOOK_BATCH_WAIT_MS: {
    schema: int(0, 1000),
    doc: 'Longest a delivery waits for others to share its transaction when a commit slot is free (0: it goes at once; under load deliveries batch up while the slots are busy).',
  },
  WEBHOOK_COMMIT_CONCURRENCY: {
    schema: int(1, 32),
    doc: 'Most delivery transactions the receiver runs at once (its pool is one more). How many of them pay is learnt from the commits (src/receiver/slots.ts): 1 fixes it at one.',
  },
  WEBHOOK_ACK_TIMEOUT_MS: { schema: int(100, 60000), doc: 'A delivery not committed within this gets 503 (the service waits 10 s).' },
  WORKER_CONCURRENCY: { schema: int(1, 64), doc: 'Jobs a worker process runs at once per queue.' },
  RECONCILE_INTERVAL_MINUTES: {
    schema: int(1, 1440),
    doc: 'Minutes between incremental sweeps of a connection while its sweeps find drift or changes the service sends no event for, or its webhooks are not all in place (and the first interval after any sweep that did).',
  },
  RECONCILE_MAX_INTERVAL_MINUTES: {
    schema: int(1, 1440),
    doc: 'Longest interval between incremental sweeps: each sweep that finds nothing while webhooks are in place doubles the interval up to this. Equal to RECONCILE_INTERVAL_MINUTES: a fixed interval.',
  },
  WEBHOOK_CHECK_MINUTES: {
    schema: int(1, 1440),
    doc: 'Minutes between checks that repair webhook subscriptions (the service deletes one after 3 days of failures).',
  },
  SERVICE_CLOCK_MARGIN_SECONDS: {
    schema: int(0, 300),
    doc: "How far apart the service's two clocks may be (its answers' Date and its webhooks' timestamp come from different machines): a read counts as after an event only when it is this much later still.",
  },
  RECONCILE_OVERLAP_SECONDS: { schema: int(0, 86400), doc: 'How far an incremental sweep reaches back before its last cursor.' },
  FULL_SWEEP_CRON: {
    schema: z.string().regex(/^(\S+\s+){4}\S+$/, 'a five-field cron expression'),
    doc: 'When the full sweep runs (cron, UTC).',
  },
  CHANNEL_LOCATIONS: {
    schema: z.string().regex(/^(\d+(,\d+)*)?$/, 'comma-separated location ids, or empty for all'),
    doc: 'Locations whose stock counts toward the channel quantity; empty: all.',
  },
  CHANNEL_SAFETY_BUFFER: { schema: decimal, doc: 'Units held back from the channel quantity.' },
  CHANNEL_HOLD_MINUTES: {
    schema: int(1, 10080),
    doc: "Minutes stock stays held for a channel order (POST /api/channels/NAME/holds, push import-order) that the service's committed stock has not shown yet; then the hold expires.",
  },
  CHANNEL_DELIVERY_BATCH: {
    schema: int(1, 5000),
    doc: "Most changes one POST to a channel's destination covers (each variant once, at its newest).",
  },
  CHANNEL_DELIVERY_PAUSE_MINUTES: {
    schema: int(0, 43200),
    doc: 'Minutes a channel destination may fail in a row before it is paused (resumed by an operator, nothing lost); 0: never paused.',
  },
  CHANNEL_WEBHOOK_URL: {
    schema: url(', or empty'),
    doc: "The destination of each connection's `default` channel that has none of its own (docs/channels.md): its changes are POSTed there, signed with CHANNEL_WEBHOOK_SECRET. Empty: none.",
  },
  OUTBOUND_ALLOWED_HOSTS: {
    schema: z.string(),
    doc: 'Hosts (names or addresses, comma-separated; host:port for that port only) our webhooks may reach although they are internal: every address that the IANA special-purpose registries call not globally reachable (loopback, private, link-local, CGNAT, documentation, reserved...) is refused otherwise, for channel destinations, CHANNEL_WEBHOOK_URL and ALERT_WEBHOOK_URL, at setting and at every connection.',
  },
  CHANNEL_WEBHOOK_SECRET: {
    schema: whsecList,
    doc: 'Standard Webhooks secret(s) CHANNEL_WEBHOOK_URL posts are signed with (whsec_ + base64 of 24-64 bytes), several separated by a space while one rotates.',
    secret: true,
    make: 'a secret of your own: echo whsec_$(openssl rand -base64 32)',
  },
  ALLOW_CREATE_CURRENCY: { schema: bool, doc: 'Order import may create a missing currency.' },
  STOCK_ADJUSTMENT_REASON: {
    schema: z.enum(['supplier', 'customer', 'damaged', 'shrinkage', 'promotion', 'production']),
    doc: 'Documented reason code of the stock adjustments a stock count makes.',
  },
  STOCK_ADJUSTMENT_REASON_ID: {
    schema: z.union([z.literal(''), z.coerce.number().int().positive()]).describe('a positive integer, or empty'),
    doc: 'A custom stock_adjustment_reason_id sent instead of STOCK_ADJUSTMENT_REASON; empty: the reason code.',
  },
  SYNC_LOG_RETENTION_DAYS: { schema: days, doc: 'Days the sync log keeps entries.' },
  AUDIT_RETENTION_DAYS: {
    // The audit log's trigger keeps every entry for a day, whatever retention asks (migration 0310).
    schema: z.coerce.number().min(1).max(3650).describe('a number of days from 1 to 3650 (fractions allowed)'),
    doc: 'Days (at least 1) the audit log keeps who changed what (console, API, CLI); nothing else deletes an entry, and nothing changes one (the database refuses both).',
  },
  DELIVERY_RETENTION_DAYS: {
    schema: days,
    doc: 'Days a processed, unhandled or rejected webhook delivery is kept (queued ones stay until handled, failed ones as long as dead letters). Below 3.05 a late retry of the service (it retries for 3 days) could be processed twice.',
  },
  CHANNEL_CHANGE_RETENTION_DAYS: {
    schema: days,
    doc: 'Days channel quantity changes are kept (variant history, GET /api/channel-stock); a feed cursor older than what is kept gets 410.',
  },
  OPERATION_RETENTION_DAYS: {
    schema: days,
    doc: 'Days a finished push operation (confirmed or failed) is kept; unfinished ones stay, and so do channel order mappings.',
  },
  CONSOLE_SAMPLE_RETENTION_DAYS: { schema: days, doc: "Days the console's minute samples are kept (its charts reach back 7 days)." },
  JOB_RETENTION_HOURS: {
    schema: z.coerce.number().positive().max(87_600).describe('a number of hours above 0 (fractions allowed)'),
    doc: 'Hours pg-boss keeps a finished job (completed, failed, cancelled) before deleting it; the rows they stood for keep the history.',
  },
  DEAD_LETTER_RETENTION_DAYS: {
    schema: days,
    doc: 'Days a dead letter waits for an operator before pg-boss deletes it (for letters that arrive after a change); the deliveries of a dead letter are kept as long.',
  },
  OPERATOR_TOKEN: {
    schema: z
      .string()
      .refine((v) => v === '' || v.length >= 24)
      .describe('empty, or at least 24 characters (openssl rand -hex 24 makes one)'),
    doc: 'Bearer token (or password) for the console and /api, at least 24 characters. Empty: open on localhost in demo mode only.',
    secret: true,
    make: 'a token of your own: openssl rand -hex 24',
  },
  TRACE_URL_TEMPLATE: {
    schema: z.string().refine((v) => v === '' || (/^https?:\/\//.test(v) && v.includes('{trace_id}')), {
      message: 'an http(s) URL containing {trace_id}, or empty',
    }),
    doc: 'Link from a traced sync-log entry to your tracing backend, {trace_id} standing for the trace id (e.g. https://tempo.example/explore?traceId={trace_id}). Empty: trace ids are shown, not linked.',
  },
  OIDC_ISSUER: {
    schema: url(', or empty'),
    doc: "Issuer URL of the company's OpenID Connect provider operators sign in with (Authorization Code with PKCE). Empty: no sign-in by name (OPERATOR_TOKEN and personal tokens only).",
  },
  OIDC_CLIENT_ID: { schema: z.string(), doc: 'Client id of commerce-sync at the OpenID provider.' },
  OIDC_CLIENT_SECRET: { schema: z.string(), doc: 'Client secret of commerce-sync at the OpenID provider.', secret: true },
  OIDC_ALLOWED_DOMAINS: {
    schema: z.string(),
    doc: 'E-mail domains whose people may sign in (comma-separated); empty: any the provider vouches for. Their e-mail must be verified.',
  },
  OIDC_ROLE_CLAIM: { schema: z.string().min(1), doc: 'The ID token claim (a string or a list) OIDC_ROLES maps to a role.' },
  OIDC_ROLES: {
    schema: z.string(),
    doc: 'Group (claim value) to role, comma-separated: `ops-admins=admin,warehouse=operator,*=viewer`; the highest a person has counts. A person with none is refused.',
  },
  OPERATOR_API_TOKEN: {
    schema: z.string(),
    doc: "A personal token (cst_..., `commerce-sync tokens create`) that CLI commands given --url URL send to that console's API instead of opening the database.",
    secret: true,
  },
  OPERATOR_SESSION_HOURS: { schema: int(1, 720), doc: 'How long a console login lasts; logging out ends it at once.' },
  OPERATOR_LOGIN_FAILURES: {
    schema: int(1, 1_000_000),
    doc: 'Wrong operator tokens (login form or Authorization header) one client address may send in 15 minutes, counted over every process; then its wrong tokens get 429 until the oldest is 15 minutes old. A right token is never refused.',
  },
  TRUST_PROXY: {
    schema: int(0, 10),
    doc: 'Proxies in front of the console whose X-Forwarded-For is trusted: the client address is the entry this many hops from its end (the one the nearest proxy saw). 0: the socket address.',
  },
  OPENAPI_CHECK_ANSWERS: {
    schema: bool,
    doc: 'Check every JSON answer of /api against the OpenAPI document (GET /api/openapi.json) before it is sent; an answer that does not match is replaced by a 500 naming the route, the status and the mismatch, and logged. For tests and development (every test runs with it on): it costs a validation per answer.',
  },
  ALERT_WEBHOOK_URL: {
    schema: url(', or empty'),
    doc: 'Where alerts are POSTed, once when one opens and once when it resolves (docs/alerts.md). Empty: not sent; the console and `status` show them all the same.',
    secret: true,
  },
  ALERT_WEBHOOK_SECRET: {
    schema: whsecList,
    doc: 'Standard Webhooks secret(s) ALERT_WEBHOOK_URL posts are signed with (whsec_ + base64 of 24-64 bytes: echo whsec_$(openssl rand -base64 32)); while one rotates, both separated by a space, the new first.',
    secret: true,
    make: 'a secret of your own: echo whsec_$(openssl rand -base64 32)',
  },
  ALERT_WEBHOOK_FORMAT: {
    schema: z.enum(['auto', 'standard', 'slack']),
    doc: 'standard: a signed Standard Webhooks JSON event; slack: a Slack-compatible incoming-webhook message ({"text": ...}); auto: slack for hooks.slack.com, else standard.',
  },
  ALERT_EVALUATE_SECONDS: { schema: int(1, 3600), doc: 'Seconds between evaluations of the alert conditions (by the workers).' },
  ALERT_QUIET_SECONDS: {
    schema: int(0, 86400),
    doc: 'A resolved alert is announced once it has stayed resolved this long; a condition back within it reopens the same alert and sends nothing (no storm from a flapping condition).',
  },
  ALERT_WINDOW_MINUTES: { schema: int(1, 1440), doc: 'Minutes over which refused signatures are counted.' },
  ALERT_SIGNATURE_FAILURES: {
    schema: int(1, 1_000_000),
    doc: 'Deliveries to a connection refused for their signature within ALERT_WINDOW_MINUTES, with none stored since, that open an alert naming COMMERCE_CLIENT_SECRET.',
  },
  ALERT_DRIFT_THRESHOLD: {
    schema: int(0, 1_000_000_000),
    doc: "Changes a connection's latest sweeps found that an event should have announced and no delivery or queued read explained (drift: changes the service sends no event for are not counted), above which an alert opens.",
  },
  ALERT_STOCK_WAIT_SECONDS: {
    schema: int(10, 86400),
    doc: 'An alert opens when a stock read has waited longer than this while the API budget is spent (stock reads starved of budget).',
  },
  ALERT_DESTINATION_FAILURES: {
    schema: int(1, 1_000_000),
    doc: "POSTs in a row to a destination (a channel's) that failed, from which an alert is open.",
  },
} as const;

type Settings = typeof settings;
export type Config = { [K in keyof Settings]: z.output<Settings[K]['schema']> };
export type SettingName = keyof Settings;

export class ConfigError extends Error {
  readonly problems: string[];
  constructor(problems: string[]) {
    super(problems.join('\n'));
    this.problems = problems;
  }
}

export function readDefaults(): Record<string, unknown> {
  return JSON.parse(readFileSync(defaultsPath, 'utf8'));
}

function allowed(schema: z.ZodType, issue: z.core.$ZodIssue): string {
  if (schema.description) return schema.description;
  if (issue.code === 'invalid_value') return `one of ${issue.values.join(', ')}`;
  return issue.message;
}

/**
 * What deploy/ ships in place of each secret (deploy/.env, the Kubernetes Secret), and the secrets deploy/.env of
 * 0.2.0 published: a deployment that left one in place must not start on a value everyone has.
 */
const PLACEHOLDER = /replace-me/i;
const PUBLISHED = new Set(['lEzQip2Xcf8B+nsMS2NhksO8KWV2P8qc+wDNeyL19qw=', 'whsec_6NMuqwFRYFJKZ12dBwMsZcFwvYFdBPZAVlm/WgUsbU8=']);

/** The problem with a setting that holds a placeholder or a published secret, naming how to make a good one. */
function notASecret(key: SettingName, raw: unknown): string | null {
  if (typeof raw !== 'string') return null;
  const what = PLACEHOLDER.test(raw)
    ? 'holds the placeholder replace-me'
    : raw.split(/[\s,]+/).some((v) => PUBLISHED.has(v))
      ? "is a secret published in 0.2.0's deploy/.env"
      : null;
  if (!what) return null;
  const spec = settings[key];
  return `${key} ${what}: set it to ${'make' in spec ? spec.make : 'a value of your own'}`;
}

/** Loads defaults, applies env overrides, validates; throws ConfigError listing every problem. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env, defaults = readDefaults()): Config {
  const problems: string[] = [];
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(defaults)) {
    if (!(key in settings)) problems.push(`config/default.json: unknown setting ${key}`);
  }
  for (const [key, spec] of Object.entries(settings) as [SettingName, Settings[SettingName]][]) {
    const fromEnv = env[key];
    if (fromEnv === undefined && !(key in defaults)) {
      problems.push(`${key} is missing: set it in config/default.json or the environment`);
      continue;
    }
    const raw = fromEnv !== undefined ? fromEnv : defaults[key];
    const unsafe = notASecret(key, raw);
    if (unsafe) {
      problems.push(unsafe);
      continue;
    }
    const input = typeof raw === 'string' && fromEnv !== undefined && raw.trim() === '' && typeof defaults[key] === 'number' ? NaN : raw;
    const result = (spec.schema as z.ZodType).safeParse(input);
    // The project's own default belongs to the project, not to the folder a command happens to run in.
    if (result.success) out[key] = 'path' in spec && fromEnv === undefined ? resolve(projectRoot, result.data as string) : result.data;
    else {
      const shown = 'secret' in spec && spec.secret ? '(hidden)' : JSON.stringify(raw);
      problems.push(`${key} = ${shown} is not valid: expected ${allowed(spec.schema as z.ZodType, result.error.issues[0]!)}`);
    }
  }
  if (!problems.length) problems.push(...crossChecks(out as Config));
  if (problems.length) throw new ConfigError(problems);
  return out as Config;
}

/** Settings that are valid alone but not together. */
function crossChecks(c: Config): string[] {
  const problems: string[] = [];
  const slack =
    c.ALERT_WEBHOOK_FORMAT === 'slack' || (c.ALERT_WEBHOOK_FORMAT === 'auto' && /^https:\/\/hooks\.slack\.com\//.test(c.ALERT_WEBHOOK_URL));
  if (c.ALERT_WEBHOOK_URL && !slack && !c.ALERT_WEBHOOK_SECRET)
    problems.push(
      'ALERT_WEBHOOK_SECRET is empty: alerts to ALERT_WEBHOOK_URL are signed (Standard Webhooks); set a whsec_ secret, or ALERT_WEBHOOK_FORMAT=slack',
    );
  if (c.CHANNEL_WEBHOOK_URL && !c.CHANNEL_WEBHOOK_SECRET)
    problems.push('CHANNEL_WEBHOOK_SECRET is empty: POSTs to CHANNEL_WEBHOOK_URL are signed (Standard Webhooks); set a whsec_ secret');
  problems.push(...oidcProblems(c));
  return problems;
}

/** The roles a person or a token acts in, lowest first: the one list (the console's guard ranks them so). */
export const OPERATOR_ROLES = ['viewer', 'operator', 'admin'] as const;
export type Role = (typeof OPERATOR_ROLES)[number];

/**
 * OIDC_ROLES read: `GROUP=ROLE` entries separated by commas (the last `=` splits, so a group may hold one); `*` is
 * anyone the provider vouches for. Each entry that does not read is a problem line.
 */
export function parseOidcRoles(text: string): { roles: Map<string, Role>; problems: string[] } {
  const roles = new Map<string, Role>();
  const problems: string[] = [];
  for (const entry of text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)) {
    const i = entry.lastIndexOf('=');
    const group = entry.slice(0, Math.max(i, 0)).trim();
    const role = entry.slice(i + 1).trim();
    if (i <= 0 || !group || !(OPERATOR_ROLES as readonly string[]).includes(role))
      problems.push(
        `OIDC_ROLES entry ${JSON.stringify(entry)} is not valid: expected GROUP=ROLE with ROLE one of ${OPERATOR_ROLES.join(', ')}`,
      );
    else if (roles.has(group)) problems.push(`OIDC_ROLES gives group ${JSON.stringify(group)} a role twice: keep one entry`);
    else roles.set(group, role as Role);
  }
  return { roles, problems };
}

/** The e-mail domains of OIDC_ALLOWED_DOMAINS, lower case; empty: any. */
export const oidcDomains = (text: string) =>
  text
    .split(',')
    .map((s) => s.trim().toLowerCase())
    .filter(Boolean);

const loopbackHost = (hostname: string) =>
  hostname === 'localhost' || hostname.endsWith('.localhost') || /^127(\.\d{1,3}){3}$/.test(hostname) || hostname === '[::1]';

/** Sign-in by name (src/console/oidc.ts): the settings it needs once OIDC_ISSUER is set, and the ones that must read. */
function oidcProblems(c: Config): string[] {
  const problems = parseOidcRoles(c.OIDC_ROLES).problems;
  for (const domain of oidcDomains(c.OIDC_ALLOWED_DOMAINS))
    if (!/^[a-z0-9-]+(\.[a-z0-9-]+)+$/.test(domain))
      problems.push(
        `OIDC_ALLOWED_DOMAINS entry ${JSON.stringify(domain)} is not an e-mail domain: expected names such as example.com, comma-separated`,
      );
  if (!c.OIDC_ISSUER) return problems;
  const issuer = new URL(c.OIDC_ISSUER);
  if (issuer.protocol !== 'https:' && !loopbackHost(issuer.hostname))
    problems.push(
      `OIDC_ISSUER = ${JSON.stringify(c.OIDC_ISSUER)} is not valid: expected an https URL (http only at a loopback address, for tests)`,
    );
  if (issuer.search || issuer.hash)
    problems.push(`OIDC_ISSUER = ${JSON.stringify(c.OIDC_ISSUER)} is not valid: expected the issuer URL without a query or fragment`);
  if (!c.OIDC_CLIENT_ID)
    problems.push(
      'OIDC_CLIENT_ID is empty: signing in through OIDC_ISSUER needs the client id commerce-sync is registered with at the provider',
    );
  if (!c.OIDC_CLIENT_SECRET)
    problems.push('OIDC_CLIENT_SECRET is empty: signing in through OIDC_ISSUER needs the client secret of that registration');
  if (!c.OIDC_ROLES.trim())
    problems.push(
      'OIDC_ROLES is empty: no one signing in through OIDC_ISSUER would get a role; map groups to roles, e.g. ops-admins=admin,warehouse=operator,*=viewer',
    );
  return problems;
}

/** The URL the service should deliver to: PUBLIC_URL, or derived from the port actually bound. */
export function publicUrl(config: Config, boundPort: number): string {
  if (config.PUBLIC_URL) return config.PUBLIC_URL.replace(/\/+$/, '');
  const host = config.HOST === '0.0.0.0' || config.HOST === '::' ? '127.0.0.1' : config.HOST;
  return `http://${host}:${boundPort}`;
}
