// Test helpers: a sandbox per test over real HTTP, a tiny JSON client for it, and a local webhook receiver.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { startSandbox, type Sandbox, type SandboxOptions } from '@commerce-sync/sandbox';

interface Teardown {
  teardown(fn: () => unknown): void;
}

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
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(
    () =>
      new Promise<void>((r) => {
        server.close(() => r());
        server.closeAllConnections();
      }),
  );
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
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
