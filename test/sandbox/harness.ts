// Test helpers: a sandbox per test over real HTTP, a tiny JSON client for it, a local webhook receiver, and a
// product with variants and orders to work on.
import http from 'node:http';
import { listenLocal } from '../support/http.ts';
import { startSandbox, type Sandbox, type SandboxOptions } from '@commerce-sync/sandbox';
import type { Teardown } from '../support/teardown.ts';

export interface Reply {
  status: number;
  headers: Headers;
  body: any;
  text: string;
}

export interface Client {
  sb: Sandbox;
  call(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<Reply>;
  get(path: string): Promise<Reply>;
  admin(method: string, path: string, body?: unknown): Promise<Reply>;
}

export async function sandbox(t: Teardown, opts: SandboxOptions = {}): Promise<Client> {
  const sb = await startSandbox({ variants: 20, ...opts });
  t.teardown(() => sb.close());
  const call = async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Reply> => {
    const res = await fetch(sb.url + path, {
      method,
      headers: { Authorization: `Bearer ${sb.token}`, 'Content-Type': 'application/json', ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    let parsed: unknown = null;
    try {
      parsed = text ? JSON.parse(text) : null;
    } catch {
      parsed = null;
    }
    return { status: res.status, headers: res.headers, body: parsed, text };
  };
  return {
    sb,
    call,
    get: (path) => call('GET', path),
    admin: (method, path, body) =>
      call(method, `/__sandbox/${path}`, body ?? (method === 'GET' ? undefined : {}), { Authorization: `Bearer ${sb.adminToken}` }),
  };
}

export interface Received {
  headers: http.IncomingHttpHeaders;
  body: string;
  json: any;
}

/** A local receiver: answers `status()` to every POST and remembers what it got. */
export async function receiver(
  t: Teardown,
  status: () => number = () => 200,
): Promise<{ url: string; got: Received[]; waitFor(n: number, ms?: number): Promise<Received[]> }> {
  const got: Received[] = [];
  const waiters: (() => void)[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      got.push({ headers: req.headers, body, json: JSON.parse(body) });
      res.writeHead(status()).end();
      for (const w of waiters.splice(0)) w();
    });
  });
  const url = `${await listenLocal(t, server)}/hook`;
  return {
    url,
    got,
    async waitFor(n, ms = 5000) {
      const end = Date.now() + ms;
      while (got.length < n && Date.now() < end)
        await new Promise<void>((r) => {
          waiters.push(r);
          setTimeout(r, 50);
        });
      return got;
    },
  };
}

/** The stock entry of a variant at a location, as the API renders it. */
export async function stockAt(
  c: Client,
  variantId: number,
  locationId: number,
): Promise<{ stock_on_hand: string; committed: string | null; incoming: string | null } | undefined> {
  const r = await c.get(`/variants/${variantId}`);
  return r.body.variant.locations.find((l: any) => l.location_id === locationId);
}

/**
 * A new product to work with: the primary location and another one, `mk` for its variants (10 on hand at the
 * primary location and 4 at the other, plus `variant()`'s fields and `extra`), the first business customer and
 * supplier, and `order` for an active order of the customer at the primary location (unless `extra` says otherwise).
 */
export async function productSetup(c: Client, opts: { product: string; variant: () => object }) {
  const loc = (await c.get('/accounts/current')).body.account.primary_location_id as number;
  const other = (await c.get('/locations')).body.locations.find((l: any) => l.id !== loc).id as number;
  const product = (await c.call('POST', '/products', { product: { name: opts.product } })).body.product;
  const mk = async (extra: object = {}) =>
    (
      await c.call('POST', '/variants', {
        variant: {
          product_id: product.id,
          ...opts.variant(),
          initial_stock_levels: [
            { location_id: loc, stock_on_hand: '10' },
            { location_id: other, stock_on_hand: '4' },
          ],
          ...extra,
        },
      })
    ).body.variant;
  const customer = (await c.get('/companies?company_type=business&limit=1')).body.companies[0];
  const supplier = (await c.get('/companies?company_type=supplier&limit=1')).body.companies[0];
  const order = async (lines: object[], extra: object = {}) => {
    const r = await c.call('POST', '/orders', {
      order: {
        company_id: customer.id,
        shipping_address_id: customer.address_ids[0],
        stock_location_id: loc,
        status: 'active',
        order_line_items: lines,
        ...extra,
      },
    });
    if (r.status !== 201) throw new Error(`order: ${r.status} ${r.text}`);
    return r.body.order;
  };
  return { loc, other, product, mk, customer, supplier, order };
}
