// One error type for everything the service (or the way to it) refuses.

export interface ApiErrorInit {
  status: number | null;
  method?: string;
  path?: string;
  requestId?: string | null;
  serviceMessage?: string | null;
  fieldErrors?: Record<string, string[]> | null;
  retryable?: boolean;
  cause?: unknown;
}

const reasons: Record<number, string> = {
  400: 'malformed request',
  401: 'access token invalid or missing',
  402: 'subscription has lapsed',
  403: 'not permitted for this account',
  404: 'not found',
  414: 'request URI too long',
  422: 'request invalid',
  429: 'rate limit exceeded',
  500: 'server error',
  502: 'bad gateway',
  503: 'service overloaded',
  504: 'gateway timeout',
};

export class ApiError extends Error {
  /** HTTP status, null for network errors (no answer). */
  status: number | null;
  /** The service's X-Request-ID. */
  requestId: string | null;
  /** The service's message. */
  serviceMessage: string | null;
  /** 422 per-field messages. */
  fieldErrors: Record<string, string[]> | null;
  retryable: boolean;
  method: string | null;
  path: string | null;

  constructor(message: string | null, init: ApiErrorInit) {
    const where = init.method && init.path ? `${init.method} ${init.path}: ` : '';
    const what = init.status === null ? 'no answer' : `${init.status} ${reasons[init.status] ?? 'error'}`;
    const fields = init.fieldErrors
      ? ` (${Object.entries(init.fieldErrors)
          .map(([f, m]) => `${f}: ${m.join(', ')}`)
          .join('; ')})`
      : '';
    const detail = message ?? init.serviceMessage ?? null;
    super(
      `${where}${what}${detail ? `: ${detail}` : ''}${fields}${init.requestId ? ` [X-Request-ID ${init.requestId}]` : ''}`,
      init.cause ? { cause: init.cause } : undefined,
    );
    this.name = 'ApiError';
    this.status = init.status;
    this.requestId = init.requestId ?? null;
    this.serviceMessage = init.serviceMessage ?? null;
    this.fieldErrors = init.fieldErrors ?? null;
    this.retryable = init.retryable ?? false;
    this.method = init.method ?? null;
    this.path = init.path ?? null;
  }
}
