// The client's retry decision alone (pure): every status the spec names, without HTTP.
import t from 'tap';
import { backoffMs, decideRetry, initialRetryState, type RetryState } from '../../src/api/retry.ts';

const policy = { maxAttempts: 3, backoffBaseMs: 100, backoffMaxMs: 1000 };
const at = (s: Partial<RetryState> = {}): RetryState => ({ ...initialRetryState, ...s });
const half = () => 0.5;

t.test('2xx is done; 4xx other than 401/402/429 fails at once, not retryable', async (t) => {
  t.same(decideRetry(200, at(), policy, {}), { action: 'done' });
  t.same(decideRetry(201, at(), policy, {}), { action: 'done' });
  for (const status of [400, 403, 404, 409, 422])
    t.same(decideRetry(status, at(), policy, {}), { action: 'fail', retryable: false }, String(status));
});

t.test('5xx, 408 and no answer back off, doubling, until the attempts are spent', async (t) => {
  for (const status of [500, 502, 503, 504, 408, null]) {
    t.same(decideRetry(status, at(), policy, {}, half), { action: 'retry', delayMs: 75, next: at({ failures: 1 }) }, `${status} first`);
    t.same(
      decideRetry(status, at({ failures: 1 }), policy, {}, half),
      { action: 'retry', delayMs: 150, next: at({ failures: 2 }) },
      `${status} second`,
    );
    t.same(decideRetry(status, at({ failures: 2 }), policy, {}, half), { action: 'fail', retryable: true }, `${status} spent`);
  }
});

t.test('backoff: half fixed, half jittered, capped', async (t) => {
  t.equal(
    backoffMs(policy, 1, () => 0),
    50,
  );
  t.equal(
    backoffMs(policy, 1, () => 1),
    100,
  );
  t.equal(
    backoffMs(policy, 10, () => 1),
    1000,
    'never above backoffMaxMs',
  );
  t.equal(
    backoffMs(policy, 10, () => 0),
    500,
  );
});

t.test('429 is sent again at once (the budget waits for the reset), up to the attempts', async (t) => {
  t.same(decideRetry(429, at(), policy, {}), { action: 'retry', delayMs: 0, next: at({ limited: 1 }) });
  t.same(decideRetry(429, at({ limited: 2 }), policy, {}), { action: 'fail', retryable: true });
  t.same(
    decideRetry(429, at({ failures: 2 }), policy, {}),
    { action: 'retry', delayMs: 0, next: at({ failures: 2, limited: 1 }) },
    '429s and failures are counted apart',
  );
});

t.test('401 refreshes once, then the connection is unauthorized', async (t) => {
  t.same(decideRetry(401, at(), policy, {}), { action: 'refresh', next: at({ refreshed: true }) });
  t.same(decideRetry(401, at({ refreshed: true }), policy, {}), { action: 'unauthorized' });
});

t.test('402 lapses the connection whatever the attempts', async (t) => {
  t.same(decideRetry(402, at(), policy, {}), { action: 'lapse' });
  t.same(decideRetry(402, at({ failures: 2, refreshed: true }), policy, {}), { action: 'lapse' });
});

t.test('503 on a list read halves the page; on a single read it backs off', async (t) => {
  t.same(decideRetry(503, at(), policy, { list: true }), { action: 'halve-page' });
  t.equal(decideRetry(503, at(), policy, { list: false }).action, 'retry');
  t.equal(decideRetry(500, at(), policy, { list: true }).action, 'retry', 'only 503 asks for a smaller page');
});
