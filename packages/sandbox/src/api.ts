// The API's routes: method + path -> service operation -> JSON answer in the spec's shapes
// (singular key for one record, plural for lists, 201 on create, 204 on update, sideloads next to the record).
import { ApiFail, type Row, type Store } from './store.ts';
import { RESOURCES } from './resources.ts';
import type { ResourceDef } from './resources/shared.ts';
import { list, sideloads, values, type ListOrder } from './list.ts';
import { render, renderComposition } from './render.ts';
import type { Service } from './service.ts';
import { listSideloads, updateAnswersRecord, type Profile } from './profile.ts';

export interface Caller {
  appId: number;
  accountId: number;
  access: 'full' | 'read';
}
export interface ApiRequest {
  method: string;
  parts: string[];
  query: URLSearchParams;
  body: Record<string, any> | null;
  caller: Caller;
}
export interface ApiAnswer {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
  route: string;
}

const CREATE: Record<string, (s: Service, b: Record<string, any>, c: Caller) => Row> = {
  addresses: (s, b) => s.catalog.createAddress(b),
  companies: (s, b) => s.catalog.createCompany(b),
  contacts: (s, b) => s.catalog.createContact(b),
  currencies: (s, b) => s.catalog.createCurrency(b),
  locations: (s, b) => s.catalog.createLocation(b),
  products: (s, b) => s.catalog.createProduct(b),
  variants: (s, b) => s.catalog.createVariant(b),
  orders: (s, b) => s.orders.createOrder(b),
  order_line_items: (s, b) => s.orders.createOrderLine(b),
  fulfillments: (s, b) => s.orders.createFulfillment(b),
  fulfillment_returns: (s, b) => s.returns.createReturn(b),
  invoices: (s, b) => s.orders.createInvoice(b),
  purchase_orders: (s, b) => s.purchasing.createPurchaseOrder(b),
  purchase_order_line_items: (s, b) => s.purchasing.createPurchaseLine(b),
  stock_adjustments: (s, b) => s.adjustments.createStockAdjustment(b),
  stock_transfers: (s, b) => s.adjustments.createStockTransfer(b),
  webhooks: (s, b, c) => s.catalog.createWebhook(b, c.appId),
};

const UPDATE: Record<string, (s: Service, id: number, b: Record<string, any>) => Row> = {
  orders: (s, id, b) => s.orders.updateOrder(id, b),
  fulfillments: (s, id, b) => s.orders.updateFulfillment(id, b),
  fulfillment_returns: (s, id, b) => s.returns.updateReturn(id, b),
  purchase_orders: (s, id, b) => s.purchasing.updatePurchaseOrder(id, b),
  order_line_items: (s, id, b) => s.orders.updateOrderLine(id, b),
  purchase_order_line_items: (s, id, b) => s.purchasing.updatePurchaseLine(id, b),
  webhooks: (s, id, b) => s.catalog.updateWebhook(id, b),
};
const PLAIN_UPDATE = new Set(['addresses', 'companies', 'contacts', 'currencies', 'locations', 'products', 'variants', 'invoices']);

const PRICE_LISTS = [
  { id: 'buy', name: 'Buy', currency_id: 1, is_cost: true, is_default: false },
  { id: 'retail', name: 'Retail', currency_id: 1, is_cost: false, is_default: false },
  { id: 'wholesale', name: 'Wholesale', currency_id: 1, is_cost: false, is_default: true },
];

function id(part: string | undefined): number {
  if (!part || !/^\d+$/.test(part)) throw new ApiFail(404, 'Not found');
  return Number(part);
}

function wrapped(body: Record<string, any> | null, key: string): Record<string, any> {
  const inner = body?.[key];
  if (inner === undefined || inner === null || typeof inner !== 'object' || Array.isArray(inner)) {
    throw new ApiFail(400, `the request body must wrap the record under "${key}"`);
  }
  return inner;
}

export class Api {
  private readonly service: Service;
  private readonly profile: Profile;
  private readonly listOrder: ListOrder;
  constructor(service: Service, profile: Profile, listOrder: ListOrder = 'created') {
    this.service = service;
    this.profile = profile;
    this.listOrder = listOrder;
  }
  private get store(): Store {
    return this.service.store;
  }

  private one(plural: string, row: Row, q: URLSearchParams, def = RESOURCES[plural]): Record<string, unknown> {
    const out: Record<string, unknown> = { [def?.singular ?? plural]: render(this.store, plural, row) };
    if (def) for (const [key, rows] of sideloads(this.store, def, [row], q)) out[key] = rows.map((r) => render(this.store, key, r));
    return out;
  }

  private visible(plural: string, row: Row, caller: Caller): void {
    if (plural === 'webhooks' && row.oauth_application_id !== caller.appId)
      throw new ApiFail(403, 'This webhook belongs to another application');
  }

  handle(req: ApiRequest): ApiAnswer {
    const { method, parts, query: q, caller } = req;
    const [head, second, third, fourth] = parts;
    if (method !== 'GET' && caller.access !== 'full') throw new ApiFail(403, 'This access token may only read');

    if (head === 'accounts') {
      if (method === 'GET' && (second === 'current' || (second && Number(second) === this.store.account.id)) && !third) {
        return {
          status: 200,
          body: { account: render(this.store, 'accounts', this.store.account) },
          route: `GET /accounts/${second === 'current' ? 'current' : ':id'}`,
        };
      }
      if (method === 'PUT' && second && !third) {
        if (Number(second) !== this.store.account.id) throw new ApiFail(second === 'current' ? 404 : 403, 'Not your account');
        this.service.run('account.update', () => this.service.catalog.updateAccount(wrapped(req.body, 'account')));
        return { status: 204, route: 'PUT /accounts/:id' };
      }
      throw new ApiFail(404, 'Not found');
    }
    if (head === 'price_lists' && !second && method === 'GET') {
      // A fixed, short collection: one page, but still the X-Pagination every collection response carries.
      const pagination = {
        total_records: PRICE_LISTS.length,
        total_pages: 1,
        first_page: true,
        last_page: true,
        out_of_bounds: false,
        offset: 0,
      };
      return {
        status: 200,
        body: { price_lists: PRICE_LISTS },
        headers: { 'X-Pagination': JSON.stringify(pagination) },
        route: 'GET /price_lists',
      };
    }
    if (head === 'variants' && second === 'composition' && method === 'GET') return this.composition(third, q);
    if (head === 'orders' && third === 'actions' && fourth && parts.length === 4 && method === 'POST') {
      const body = req.body ?? {};
      const result = this.service.run(`order.${fourth}`, () => this.service.orders.orderAction(id(second), fourth, body));
      return { status: 200, body: this.renderAction(result), route: `POST /orders/:id/actions/${fourth}` };
    }
    if (head === 'purchase_orders' && third === 'actions' && fourth === 'receive' && parts.length === 4 && method === 'POST') {
      const body = req.body && typeof req.body === 'object' ? req.body : {};
      const proc = this.service.run('purchase_order.receive', () => this.service.purchasing.receivePurchaseOrder(id(second), body));
      return {
        status: 200,
        body: { procurement: render(this.store, 'procurements', proc) },
        route: 'POST /purchase_orders/:id/actions/receive',
      };
    }
    if (head === 'stock_transfers' && third === 'actions' && fourth && parts.length === 4 && method === 'POST') {
      const tr = this.service.run(`stock_transfer.${fourth}`, () => this.service.adjustments.transferAction(id(second), fourth));
      return {
        status: 200,
        body: { stock_transfer: render(this.store, 'stock_transfers', tr) },
        route: `POST /stock_transfers/:id/actions/${fourth}`,
      };
    }

    const def = head ? RESOURCES[head] : undefined;
    if (!def || parts.length > 2) throw new ApiFail(404, 'Not found');
    const plural = def.plural;
    const table = this.store.table(plural)!;
    if (!second) {
      if (method === 'GET') return this.list(def, q, caller);
      if (method === 'POST' && CREATE[plural]) {
        const row = this.service.run(`${def.singular}.create`, () =>
          CREATE[plural]!(this.service, wrapped(req.body, def.singular), caller),
        );
        return { status: 201, body: this.one(plural, row, new URLSearchParams()), route: `POST /${plural}` };
      }
      throw new ApiFail(404, `${method} /${plural} is not an endpoint`);
    }
    const recordId = id(second);
    const route = `${method} /${plural}/:id`;
    if (method === 'GET') {
      const row = table.get(recordId);
      if (!row) throw new ApiFail(404, `${def.singular} ${recordId} not found`);
      this.visible(plural, row, caller);
      return { status: 200, body: this.one(plural, row, q), route };
    }
    if (method === 'PUT' && (UPDATE[plural] || PLAIN_UPDATE.has(plural))) {
      const body = wrapped(req.body, def.singular);
      const existing = table.get(recordId);
      if (existing) this.visible(plural, existing, caller);
      const row = this.service.run(`${def.singular}.update`, () =>
        UPDATE[plural] ? UPDATE[plural]!(this.service, recordId, body) : this.service.catalog.update(plural, recordId, body),
      );
      if (updateAnswersRecord(this.profile, plural)) {
        return { status: 200, body: this.one(plural, row, new URLSearchParams('include=fulfillment_line_items')), route };
      }
      return { status: 204, route };
    }
    if (method === 'DELETE' && def.deletion) {
      const row = table.get(recordId);
      if (!row) throw new ApiFail(404, `${def.singular} ${recordId} not found`);
      this.visible(plural, row, caller);
      this.service.run(`${def.singular}.destroy`, () => this.service.destroy(plural, recordId));
      return { status: 204, route };
    }
    throw new ApiFail(404, `${method} /${plural}/{id} is not an endpoint`);
  }

  private list(def: ResourceDef, q: URLSearchParams, caller: Caller): ApiAnswer {
    const table = this.store.table(def.plural)!;
    const extra = def.plural === 'webhooks' ? [(r: Row) => r.oauth_application_id === caller.appId] : [];
    const { records, pagination } = list(def, table.order, q, extra, (i) => table.get(i), this.store, this.listOrder);
    const body: Record<string, unknown> = { [def.plural]: records.map((r) => render(this.store, def.plural, r)) };
    if (listSideloads(this.profile, def.plural)) {
      for (const [key, rows] of sideloads(this.store, def, records, q)) body[key] = rows.map((r) => render(this.store, key, r));
    }
    return { status: 200, body, headers: { 'X-Pagination': JSON.stringify(pagination) }, route: `GET /${def.plural}` };
  }

  private composition(bundle: string | undefined, q: URLSearchParams): ApiAnswer {
    const includes = new Set(values(q, 'include', true));
    const sideload = (rows: Record<string, unknown>[]) => {
      const ids = new Set<number>();
      for (const r of rows) {
        if (includes.has('bundle')) ids.add(r.bundle_id as number);
        if (includes.has('component')) ids.add(r.component_id as number);
      }
      return [...ids]
        .map((i) => this.store.variants.get(i))
        .filter((v): v is Row => !!v)
        .map((v) => render(this.store, 'variants', v));
    };
    if (bundle !== undefined) {
      const v = this.store.variants.get(id(bundle));
      if (!v?.composite) throw new ApiFail(404, `bundle ${bundle} not found`);
      const rows = renderComposition(this.store, v.id);
      const body: Record<string, unknown> = { composition: rows };
      if (includes.size) body.variants = sideload(rows);
      return { status: 200, body, route: 'GET /variants/composition/:id' };
    }
    // One row per bundle component; ids filter bundles, bundle_sku (or sku) and component_id narrow further.
    const ids = values(q, 'ids', true).map(Number);
    const skus = new Set([...values(q, 'bundle_sku', true), ...values(q, 'sku', true)]);
    const comps = new Set(values(q, 'component_id', true).map(Number));
    const rows: Record<string, unknown>[] = [];
    const bundles = ids.length ? ids : [...this.store.compositions.keys()].sort((a, b) => b - a);
    for (const b of bundles) {
      const v = this.store.variants.get(b);
      if (!v?.composite) continue;
      if (skus.size && !skus.has(v.sku)) continue;
      for (const r of renderComposition(this.store, b)) if (!comps.size || comps.has(r.component_id as number)) rows.push(r);
    }
    const fake: ResourceDef = { plural: 'composition', singular: 'composition', writable: {}, filters: {}, defaultStatuses: null };
    const q2 = new URLSearchParams();
    for (const k of ['limit', 'page']) if (q.get(k)) q2.set(k, q.get(k)!);
    const pageRows = rows.map((r, i) => ({ ...r, id: i, created_at: '', updated_at: '' }) as unknown as Row);
    const { records, pagination } = list(fake, [...pageRows].reverse(), q2);
    const out = records.map(({ id: _i, created_at: _c, updated_at: _u, ...r }) => r);
    const body: Record<string, unknown> = { composition: out };
    if (includes.size) body.variants = sideload(out);
    return { status: 200, body, headers: { 'X-Pagination': JSON.stringify(pagination) }, route: 'GET /variants/composition' };
  }

  private renderAction(result: Record<string, unknown>): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    const keyOf: Record<string, string> = {
      invoice: 'invoices',
      order: 'orders',
      fulfillment: 'fulfillments',
      fulfillments: 'fulfillments',
    };
    for (const [k, v] of Object.entries(result)) {
      out[k] = Array.isArray(v) ? v.map((r) => render(this.store, keyOf[k]!, r)) : render(this.store, keyOf[k]!, v as Row);
    }
    return out;
  }

  /** Every record of a resource, archived included (admin snapshot). */
  snapshot(plural: string): Record<string, unknown>[] | null {
    if (plural === 'accounts') return [render(this.store, 'accounts', this.store.account)];
    if (plural === 'composition') return [...this.store.compositions.keys()].flatMap((b) => renderComposition(this.store, b));
    const t = this.store.table(plural);
    if (!t) return null;
    return t.order.map((r) => render(this.store, plural, r));
  }
}
