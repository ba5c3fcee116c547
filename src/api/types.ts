// The public shapes of the API client (the contract other parts code against).
import type { Connection } from '../db/schema.ts';
import type { ConnectionTraits } from './state.ts';

/** interactive/outbound first, webhook-driven reads next, reconcile last (it cannot take the reserve). */
export type Priority = 'interactive' | 'outbound' | 'webhook' | 'reconcile';

export const priorityRank: Record<Priority, number> = { interactive: 0, outbound: 0, webhook: 1, reconcile: 2 };
export const RECONCILE_RANK = 2;

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
  sideloads: Record<string, any[]>;
  pagination: Pagination | null;
  requestId: string | null;
  /** The service's clock no later than when it read this page (see Raw.asOf); null when it sent no Date. */
  asOf: number | null;
}

/** What a read by ids returns. `asOf`: the earliest of its pages' (null if any page had none). */
export interface ByIds<T> {
  records: T[];
  sideloads: Record<string, any[]>;
  requests: number;
  asOf: number | null;
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

export interface ApiResponse<T = any> {
  status: number;
  body: T;
  headers: Headers;
  requestId: string | null;
}

export type OrderAction = 'invoice' | 'pay' | 'pack' | 'fulfil' | 'void';

export interface ApiClient {
  /** The connections row; status and tokens are kept current as the client learns of changes. */
  readonly connection: Connection;
  /** What this connection's service has been seen to refuse, shared by the runtime's clients of it. */
  readonly traits: ConnectionTraits;
  request<T = any>(method: Method, path: string, opts?: RequestOptions): Promise<ApiResponse<T>>;
  /** Parsed body. */
  get<T = any>(path: string, opts?: RequestOptions): Promise<T>;
  /** limit=250, driven by X-Pagination; a 503 halves the page size for the rest of the read. */
  paginate<T = any>(path: string, opts?: RequestOptions): AsyncIterable<Page<T>>;
  /**
   * ids split into <=250 per request and URIs under API_MAX_URI_LENGTH; missing ids are simply absent. With
   * `by` the ids filter another field (parent ids), and each chunk is read page by page, 250 records a page.
   */
  getByIds<T = any>(path: string, ids: number[], opts?: RequestOptions): Promise<ByIds<T>>;
  /** More than 150 lines: create with the first 150, then PUTs adding the rest; the order as it then is. */
  createOrder(order: object, opts?: WriteOptions): Promise<any>;
  /** Answers nothing (the service's 204): a caller that needs the order reads it. */
  updateOrder(id: number, order: object, opts?: WriteOptions): Promise<void>;
  orderAction(id: number, action: OrderAction, body?: object, opts?: WriteOptions): Promise<any>;
  createFulfillment(f: object, opts?: WriteOptions): Promise<any>;
  /** The fulfillment after the update: the answer when it is the record, else read back by id (the 204). */
  updateFulfillment(id: number, f: object, opts?: WriteOptions): Promise<any>;
  createFulfillmentReturn(r: object, opts?: WriteOptions): Promise<any>;
  receivePurchaseOrder(id: number, opts?: WriteOptions): Promise<any>;
  createStockAdjustment(a: object, opts?: WriteOptions): Promise<any>;
  listWebhooks(): Promise<any[]>;
  createWebhook(w: { address: string; event: string }): Promise<any>;
  deleteWebhook(id: number): Promise<void>;
  createCompany(c: object, opts?: WriteOptions): Promise<any>;
  createAddress(a: object, opts?: WriteOptions): Promise<any>;
  createCurrency(c: object, opts?: WriteOptions): Promise<any>;
}
