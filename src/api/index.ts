// The Commerce Operations API client: authenticated, rate-budgeted, batched access to the service.
// Everything else in commerce-sync reaches the service through these exports (see docs/api.md).
export type {
  ApiClient,
  ApiResponse,
  ByIds,
  ConnectionTraits,
  Method,
  OrderAction,
  OrderActionAnswer,
  Page,
  Pagination,
  Priority,
  ProcurementAnswer,
  QueryValue,
  RequestOptions,
  WebhookRecord,
  WriteOptions,
} from './types.ts';
export { ApiError } from './errors.ts';
export {
  addOAuthConnection,
  addTokenConnection,
  clientCache,
  clientFor,
  probeLapsed,
  getConnection,
  listConnections,
  normalizeBaseUrl,
} from './connections.ts';
export type { ClientDeps, ClientOptions } from './transport.ts';
export { ClientState } from './client-state.ts';
export { effectiveReserve } from './budget.ts';
export { earliest, latest, PAGE_SIZE } from './reads.ts';
export { ORDER_LINES_PER_REQUEST } from './writes.ts';
