// A valid Config for tests: the defaults, with the given settings overridden as environment variables would.
import { loadConfig, type Config } from '../../src/config.ts';

export function testConfig(overrides: Partial<Record<keyof Config, string | number | boolean>> = {}): Config {
  const env: NodeJS.ProcessEnv = { LOG_LEVEL: 'silent' };
  for (const [k, v] of Object.entries(overrides)) env[k] = String(v);
  return loadConfig(env);
}
