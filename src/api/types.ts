// The public shapes of the API client (the contract other parts code against).
import type { ServiceRecord } from '../catalog/records.ts';
import type { Connection } from '../db/schema.ts';

/** interactive/outbound first, webhook-driven reads next, reconcile last (it cannot take the reserve). */
export type Priority = 'interactive' | 'outbound' | 'webhook' | 'reconcile';

export const priorityRank: Record<Priority, number> = { interactive: 0, outbound: 0, webhook: 1, reconcile: 2 };

/** What a connection's service has been seen to do, kept for the runtime's life. */
export interface ConnectionTraits {
  /**
   * It refuses several values of `status` in one read (the spec allows status[]=a&status[]=b but does not show
   * it for status): reads of every state go one state at a time (src/api/live.ts).
   */
  singleStatusOnly: boolean;
}

export interface Pagination {
  total_records: number;
  total_pages: number;
  first_page: boolean;
  last_page: boolean;
  out_of_bounds: boolean;
  offset: number;
}

export interface Page<T> {
  records: T[];
  /** Every other top-level array of the answer, by key (the related records it includes), as it came. */
  sideloads: Record<string, unknown[]>;
  pagination: Pagination | null;
  requestId: string | null;
  /** The service's clock no later than when it read this page (see Raw.asOf); null when it sent no Date. */
  asOf: number | null;
  /** The service's clock no earlier than when it read this page (see Raw.readBy). */
  readBy?: number | null;
}

/** What a read by ids returns. `asOf`: the earliest of its pages' (null if any page had none). */
export interface ByIds<T> {
  records: T[];
  sideloads: Record<string, unknown[]>;
  requests: number;
  asOf: number | null;
  /** The latest of its pages' readBy (null if any page had none). */
  readBy?: number | null;
}

export type QueryValue = string | number | boolean | Array<string | number> | undefined | null;

export interface RequestOptions {
  query?: Record<string, QueryValue>;
  body?: unknown;
  /** Default 'interactive'. */
  priority?: Priority;
  /** POST/PUT get one automatically if omitted; the same across retries of this call. */
  idempotencyKey?: string;
  /** Response key to unwrap (defaults from the path: 'variants' for /variants). */
  key?: string;
  /** getByIds: the filter the ids go in (default `ids`; `order_id` reads an order's lines by parent). */
  by?: string;
}

export interface WriteOptions {
  idempotencyKey?: string;
  priority?: Priority;
}

export type Method = 'GET' | 'POST' | 'PUT' | 'DELETE';

export interface ApiResponse<T = unknown> {
  status: number;
  body: T;
  headers: Headers;
  requestId: string | null;
}

export type OrderAction = 'invoice' | 'pay' | 'pack' | 'fulfil' | 'void';

/**
 * What an order action answers, as it came. The spec shows no body; the sandbox answers `invoice` with
 * {invoice}, `pay` and `void` with {order}, `pack` with {fulfillment}, `fulfil` with {fulfillments: [...]}.
 * null when the answer had no body.
 */
export interface OrderActionAnswer {
  order?: ServiceRecord;
  invoice?: ServiceRecord;
  fulfillment?: ServiceRecord;
  fulfillments?: ServiceRecord[];
  [field: string]: unknown;
}

/** A webhook subscription as the service lists it: where deliveries of one event go. */
export interface WebhookRecord extends ServiceRecord {
  address: string;
  event: string;
}

/** What receiving a purchase order answers: the procurement record (`procurement` only if it came nested twice). */
export interface ProcurementAnswer extends ServiceRecord {
  procurement?: ServiceRecord;
}

export interface ApiClient {
  /** The connections row; status and tokens are kept current as the client learns of changes. */
  readonly connection: Connection;
  /** What this connection's service has been seen to refuse, shared by the runtime's clients of it. */
  readonly traits: ConnectionTraits;
  /*
   * The reads' T is the shape the caller expects of the answer; nothing checks it. Its default is left untyped
   * for tests (test/api, test/push, test/sync), which read answers field by field without naming a shape.
   */
  // biome-ignore lint/suspicious/noExplicitAny: for tests, which read answers field by field without naming a shape; src/ compiles with unknown here
  request<T = any>(method: Method, path: string, opts?: RequestOptions): Promise<ApiResponse<T>>;
  /** Parsed body. */
  // biome-ignore lint/suspicious/noExplicitAny: for tests, which read answers field by field without naming a shape; src/ compiles with unknown here
  get<T = any>(path: string, opts?: RequestOptions): Promise<T>;
  /** limit=250, driven by X-Pagination; a 503 halves the page size for the rest of the read. */
  // biome-ignore lint/suspicious/noExplicitAny: for tests, which read answers field by field without naming a shape; src/ compiles with unknown here
  paginate<T = any>(path: string, opts?: RequestOptions): AsyncIterable<Page<T>>;
  /**
   * ids split into <=250 per request and URIs under API_MAX_URI_LENGTH; missing ids are simply absent. With
   * `by` the ids filter another field (parent ids), and each chunk is read page by page, 250 records a page.
   */
  // biome-ignore lint/suspicious/noExplicitAny: for tests, which read answers field by field without naming a shape; src/ compiles with unknown here
  getByIds<T = any>(path: string, ids: number[], opts?: RequestOptions): Promise<ByIds<T>>;
  /** More than 150 lines: create with the first 150, then PUTs adding the rest; the order as it then is. */
  createOrder(order: object, opts?: WriteOptions): Promise<ServiceRecord>;
  /** Answers nothing (the service's 204): a caller that needs the order reads it. */
  updateOrder(id: number, order: object, opts?: WriteOptions): Promise<void>;
  orderAction(id: number, action: OrderAction, body?: object, opts?: WriteOptions): Promise<OrderActionAnswer | null>;
  createFulfillment(f: object, opts?: WriteOptions): Promise<ServiceRecord>;
  /** The fulfillment after the update: the answer when it is the record, else read back by id (the 204). */
  updateFulfillment(id: number, f: object, opts?: WriteOptions): Promise<ServiceRecord>;
  createFulfillmentReturn(r: object, opts?: WriteOptions): Promise<ServiceRecord>;
  receivePurchaseOrder(id: number, opts?: WriteOptions): Promise<ProcurementAnswer | null>;
  createStockAdjustment(a: object, opts?: WriteOptions): Promise<ServiceRecord>;
  listWebhooks(): Promise<WebhookRecord[]>;
  createWebhook(w: { address: string; event: string }): Promise<WebhookRecord>;
  deleteWebhook(id: number): Promise<void>;
  createCompany(c: object, opts?: WriteOptions): Promise<ServiceRecord>;
  createAddress(a: object, opts?: WriteOptions): Promise<ServiceRecord>;
  createCurrency(c: object, opts?: WriteOptions): Promise<ServiceRecord>;
}
