// The alert settings: a standard-format ALERT_WEBHOOK_URL needs a whsec_ secret; Slack's does not; a malformed
// secret is refused with the setting named and its value hidden.
import t from 'tap';
import { type ConfigError, loadConfig } from '../../src/config.ts';
import { alertFormat } from '../../src/alerts/notify.ts';

const load = (env: Record<string, string>) => loadConfig({ LOG_LEVEL: 'silent', ...env });
const problems = (env: Record<string, string>) => {
  try {
    load(env);
    return [];
  } catch (err) {
    return (err as ConfigError).problems;
  }
};

t.test('alert settings are checked together', async (t) => {
  const secret = `whsec_${Buffer.alloc(32, 1).toString('base64')}`;
  t.match(problems({ ALERT_WEBHOOK_URL: 'https://alerts.example.com/hook' }), [
    /^ALERT_WEBHOOK_SECRET is empty: .*whsec_.*ALERT_WEBHOOK_FORMAT=slack/,
  ]);
  t.same(problems({ ALERT_WEBHOOK_URL: 'https://alerts.example.com/hook', ALERT_WEBHOOK_SECRET: secret }), []);
  t.same(
    problems({ ALERT_WEBHOOK_URL: 'https://alerts.example.com/hook', ALERT_WEBHOOK_SECRET: `${secret} ${secret}` }),
    [],
    'two while one rotates',
  );
  t.same(problems({ ALERT_WEBHOOK_URL: 'https://hooks.slack.com/services/T0/B0/abc' }), [], "Slack's URL is its own secret");
  const bad = problems({ ALERT_WEBHOOK_SECRET: 'whsec_short-and-not-base64!' });
  t.match(bad, [/^ALERT_WEBHOOK_SECRET = \(hidden\) is not valid: expected .*whsec_/]);
  t.equal(alertFormat(load({ ALERT_WEBHOOK_URL: 'https://hooks.slack.com/services/T0/B0/abc' })), 'slack');
  t.equal(alertFormat(load({ ALERT_WEBHOOK_URL: 'https://alerts.example.com/h', ALERT_WEBHOOK_SECRET: secret })), 'standard');
  t.equal(alertFormat(load({ ALERT_WEBHOOK_URL: 'https://alerts.example.com/h', ALERT_WEBHOOK_FORMAT: 'slack' })), 'slack');
});
