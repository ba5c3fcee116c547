// A valid Config for tests: the defaults, with the given settings overridden as environment variables would.
import { loadConfig, type Config } from '../../src/config.ts';

export function testConfig(overrides: Partial<Record<keyof Config, string | number | boolean>> = {}): Config {
  // The tests' sandboxes run their clocks fast (time scale 100) or set them by hand, and fixtures carry fixed
  // timestamps: delivery timestamps are not ours to judge, except in the tests of that check.
  // Their channel and alert endpoints listen on loopback, which our webhooks may reach only when allowed by name.
  // Every /api answer a test receives is checked against the OpenAPI document (src/openapi/check.ts): a drifted
  // answer is a 500, failing the test that met it.
  const env: NodeJS.ProcessEnv = {
    LOG_LEVEL: 'silent',
    WEBHOOK_MAX_FUTURE_SECONDS: '0',
    OUTBOUND_ALLOWED_HOSTS: '127.0.0.1',
    OPENAPI_CHECK_ANSWERS: 'true',
  };
  for (const [k, v] of Object.entries(overrides)) env[k] = String(v);
  return loadConfig(env);
}
