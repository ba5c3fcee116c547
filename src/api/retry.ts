// What the client does with an answer (or its absence), as the spec's status codes say: a pure function of
// the status, the attempts so far and the call, so every rule is testable without HTTP (see budget.ts's decide()).
// The transport (transport.ts) carries it out: sleeps, reloads or refreshes the token, marks the connection.

/** Attempts so far of one call. */
export interface RetryState {
  /** 5xx/408 answers and requests that got no answer. */
  failures: number;
  /** 429 answers (our accounting let a request through that the service refused). */
  limited: number;
  /** The access token was already reloaded or refreshed for a 401. */
  refreshed: boolean;
}

export interface RetryPolicy {
  /** API_MAX_ATTEMPTS: attempts for a call failing with 5xx/408/429 or no answer. */
  maxAttempts: number;
  /** First backoff delay; doubles per failure up to backoffMaxMs, with half of it jittered. */
  backoffBaseMs: number;
  backoffMaxMs: number;
}

export type RetryDecision =
  | { action: 'done' }
  /** Send again after delayMs (0: the budget gate does the waiting, as after a 429). */
  | { action: 'retry'; delayMs: number; next: RetryState }
  /** 401, the first time: reload a newer token (another process refreshed it) or refresh it, then retry. */
  | { action: 'refresh'; next: RetryState }
  /** 401 again after a refresh: the connection is unauthorized. */
  | { action: 'unauthorized' }
  /** 402: the subscription lapsed; the connection stops sending. */
  | { action: 'lapse' }
  /** 503 on a list read: the caller halves the page size instead of retrying the same page. */
  | { action: 'halve-page' }
  | { action: 'fail'; retryable: boolean };

export const initialRetryState: RetryState = { failures: 0, limited: 0, refreshed: false };

/** The backoff before retry number `failures` (1-based): between half and all of base x 2^(failures-1), capped. */
export function backoffMs(policy: RetryPolicy, failures: number, random: () => number = Math.random): number {
  const cap = Math.min(policy.backoffMaxMs, policy.backoffBaseMs * 2 ** (failures - 1));
  return Math.round(cap / 2 + random() * (cap / 2));
}

/**
 * status null: no answer came (network error, timeout). `list` marks a list read of more than one record,
 * whose 503 is handed back so the page can shrink.
 */
export function decideRetry(
  status: number | null,
  state: RetryState,
  policy: RetryPolicy,
  call: { list?: boolean },
  random: () => number = Math.random,
): RetryDecision {
  const failed = (): RetryDecision => {
    const failures = state.failures + 1;
    if (failures >= policy.maxAttempts) return { action: 'fail', retryable: true };
    return { action: 'retry', delayMs: backoffMs(policy, failures, random), next: { ...state, failures } };
  };
  if (status === null) return failed();
  if (status >= 200 && status < 300) return { action: 'done' };
  if (status === 401) return state.refreshed ? { action: 'unauthorized' } : { action: 'refresh', next: { ...state, refreshed: true } };
  if (status === 402) return { action: 'lapse' };
  if (status === 429) {
    const limited = state.limited + 1;
    return limited < policy.maxAttempts
      ? { action: 'retry', delayMs: 0, next: { ...state, limited } }
      : { action: 'fail', retryable: true };
  }
  if (status === 503 && call.list) return { action: 'halve-page' };
  if (status === 500 || status === 502 || status === 503 || status === 504 || status === 408) return failed();
  return { action: 'fail', retryable: false };
}
