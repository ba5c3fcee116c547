// Writes: the typed write methods of the client contract (ApiClient), built on its request(), get() and
// paginate() alone. Large orders are created in parts; the `fulfil` action falls back to `fulfill`; an update
// that answers without its record (the service's 204) is read back where the caller is given the record.
import { randomUUID } from 'node:crypto';
import type { ServiceRecord } from '../catalog/records.ts';
import { ApiError } from './errors.ts';
import { isObject } from './http.ts';
import type {
  ApiResponse,
  Method,
  OrderAction,
  OrderActionAnswer,
  Page,
  Priority,
  ProcurementAnswer,
  RequestOptions,
  WebhookRecord,
  WriteOptions,
} from './types.ts';

export const ORDER_LINES_PER_REQUEST = 150;

/** What an answer holds under `key` when it wraps its record so ({"order": {...}}), else the answer itself. */
const unwrap = (body: unknown, key: string): unknown => (isObject(body) && key in body ? body[key] : body);

/** The record an answer carries under `key`, as it came: a create answers 201 with it (not checked here). */
const recordIn = <R extends ServiceRecord = ServiceRecord>(body: unknown, key: string) => unwrap(body, key) as R;

/** The write methods; the client (client.ts) extends this with its transport and reads. */
export abstract class Writes {
  abstract request<T = unknown>(method: Method, path: string, opts?: RequestOptions): Promise<ApiResponse<T>>;
  abstract get<T = unknown>(path: string, opts?: RequestOptions): Promise<T>;
  abstract paginate<T = unknown>(path: string, opts?: RequestOptions): AsyncIterable<Page<T>>;

  /** One write: POST/PUT carry an idempotency key; outbound priority unless told. */
  async #write<T = unknown>(
    method: 'POST' | 'PUT' | 'DELETE',
    path: string,
    body: unknown,
    opts: WriteOptions = {},
    priority: Priority = 'outbound',
  ): Promise<T> {
    return (await this.request<T>(method, path, { body, idempotencyKey: opts.idempotencyKey, priority: opts.priority ?? priority })).body;
  }

  async createOrder(order: object, opts: WriteOptions = {}): Promise<ServiceRecord> {
    const lines = (order as { order_line_items?: unknown[] }).order_line_items;
    const key = opts.idempotencyKey ?? randomUUID();
    if (!Array.isArray(lines) || lines.length <= ORDER_LINES_PER_REQUEST) {
      return recordIn(await this.#write('POST', '/orders', { order }, { ...opts, idempotencyKey: key }), 'order');
    }
    // Large orders may time out in one request: create with the first lines, add the rest by PUT. Each part
    // has its own key derived from the operation's, so a retried operation repeats none of them.
    const first = { ...order, order_line_items: lines.slice(0, ORDER_LINES_PER_REQUEST) };
    const created = unwrap(await this.#write('POST', '/orders', { order: first }, { ...opts, idempotencyKey: key }), 'order');
    const id = isObject(created) ? created.id : undefined;
    if (typeof id !== 'number')
      throw new ApiError('order creation answered without an order id', { status: null, method: 'POST', path: '/orders' });
    let last: unknown = null;
    for (let i = ORDER_LINES_PER_REQUEST, part = 1; i < lines.length; i += ORDER_LINES_PER_REQUEST, part++) {
      const batch = lines.slice(i, i + ORDER_LINES_PER_REQUEST);
      last = await this.#write(
        'PUT',
        `/orders/${id}`,
        { order: { order_line_items: batch } },
        { ...opts, idempotencyKey: `${key}:lines-${part}` },
      );
    }
    return this.#afterUpdate(`/orders/${id}`, 'order', id, last, opts);
  }

  /**
   * The record as the service holds it after an update. The service answers updates 204 with no body
   * (real-service-notes §7), and a 204 proves only that nothing was refused: unless the answer is the record
   * itself, it is read back by id (one request, at the write's priority).
   */
  async #afterUpdate(path: string, key: string, id: number, answer: unknown, opts: WriteOptions): Promise<ServiceRecord> {
    const record = unwrap(answer, key);
    if (isObject(record) && Number(record.id) === id) return record as ServiceRecord;
    return recordIn(await this.get(path, { priority: opts.priority ?? 'outbound' }), key);
  }

  /** Answers nothing (the service's 204): a caller that needs the order reads it. */
  async updateOrder(id: number, order: object, opts: WriteOptions = {}): Promise<void> {
    await this.#write('PUT', `/orders/${id}`, { order }, opts);
  }

  /** The answer as it came (see OrderActionAnswer: the spec shows none). */
  async orderAction(id: number, action: OrderAction, body: object = {}, opts: WriteOptions = {}): Promise<OrderActionAnswer | null> {
    const key = opts.idempotencyKey ?? randomUUID();
    try {
      return await this.#write<OrderActionAnswer | null>('POST', `/orders/${id}/actions/${action}`, body, { ...opts, idempotencyKey: key });
    } catch (err) {
      // One published guide spells the path `fulfill`.
      if (action === 'fulfil' && err instanceof ApiError && err.status === 404) {
        return this.#write<OrderActionAnswer | null>('POST', `/orders/${id}/actions/fulfill`, body, { ...opts, idempotencyKey: key });
      }
      throw err;
    }
  }

  async createFulfillment(f: object, opts?: WriteOptions): Promise<ServiceRecord> {
    return recordIn(await this.#write('POST', '/fulfillments', { fulfillment: f }, opts), 'fulfillment');
  }

  async updateFulfillment(id: number, f: object, opts: WriteOptions = {}): Promise<ServiceRecord> {
    const path = `/fulfillments/${id}`;
    return this.#afterUpdate(path, 'fulfillment', id, await this.#write('PUT', path, { fulfillment: f }, opts), opts);
  }

  async createFulfillmentReturn(r: object, opts?: WriteOptions): Promise<ServiceRecord> {
    return recordIn(await this.#write('POST', '/fulfillment_returns', { fulfillment_return: r }, opts), 'fulfillment_return');
  }

  async receivePurchaseOrder(id: number, opts?: WriteOptions): Promise<ProcurementAnswer | null> {
    return unwrap(await this.#write('POST', `/purchase_orders/${id}/actions/receive`, {}, opts), 'procurement') as ProcurementAnswer | null;
  }

  async createStockAdjustment(a: object, opts?: WriteOptions): Promise<ServiceRecord> {
    return recordIn(await this.#write('POST', '/stock_adjustments', { stock_adjustment: a }, opts), 'stock_adjustment');
  }

  async listWebhooks(): Promise<WebhookRecord[]> {
    const all: WebhookRecord[] = [];
    for await (const page of this.paginate<WebhookRecord>('/webhooks')) all.push(...page.records);
    return all;
  }

  async createWebhook(w: { address: string; event: string }): Promise<WebhookRecord> {
    return recordIn<WebhookRecord>(await this.#write('POST', '/webhooks', { webhook: w }, {}, 'interactive'), 'webhook');
  }

  async deleteWebhook(id: number): Promise<void> {
    try {
      await this.request('DELETE', `/webhooks/${id}`);
    } catch (err) {
      if (err instanceof ApiError && err.status === 404) return; // already gone: the goal is reached
      throw err;
    }
  }

  async createCompany(c: object, opts?: WriteOptions): Promise<ServiceRecord> {
    return recordIn(await this.#write('POST', '/companies', { company: c }, opts), 'company');
  }

  async createAddress(a: object, opts?: WriteOptions): Promise<ServiceRecord> {
    return recordIn(await this.#write('POST', '/addresses', { address: a }, opts), 'address');
  }

  async createCurrency(c: object, opts?: WriteOptions): Promise<ServiceRecord> {
    return recordIn(await this.#write('POST', '/currencies', { currency: c }, opts), 'currency');
  }
}
