// A recording load balancer between the sandbox and our receivers: webhook deliveries go round-robin to the
// receivers given, and every answer the service saw is recorded by delivery id. A receiver that is down
// (refused, reset, killed mid-request) gets the service a 502, as a real load balancer would. So a test knows
// exactly which deliveries were acknowledged with a 2xx, whatever happened to the receivers.
import { createHash } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Teardown } from './teardown.ts';

export interface DeliveryProxy {
  url: string;
  /** Receivers to forward to (base URLs); replace to add, remove or restart them. */
  targets: string[];
  /** Delivery ids (X-Service-Delivery) that got a 2xx answer. */
  acked: Set<string>;
  /** Answers seen, by status ('502' for an unreachable receiver). */
  statuses: Map<string, number>;
  /** POSTs forwarded. */
  readonly forwarded: number;
  close(): Promise<void>;
}

// The body digest of each acknowledged delivery, by the proxy's `acked` set: a delivery whose body the receiver had
// stored already under another delivery id (a resend: migration 0240) is acknowledged without a row of its own.
const digests = new WeakMap<Set<string>, Map<string, string>>();

/** The SHA-256 (hex) of each acknowledged delivery's body, for the `acked` set of a proxy. */
export const ackedDigests = (acked: Set<string>): Map<string, string> => digests.get(acked) ?? new Map();

export async function startDeliveryProxy(t: Teardown | null, targets: string[] = []): Promise<DeliveryProxy> {
  const acked = new Set<string>();
  const bodies = new Map<string, string>();
  digests.set(acked, bodies);
  const statuses = new Map<string, number>();
  let next = 0;
  let forwarded = 0;
  const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
  const count = (status: number) => statuses.set(String(status), (statuses.get(String(status)) ?? 0) + 1);
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const delivery = String(req.headers['x-service-delivery'] ?? '');
      const list = proxy.targets;
      if (!list.length) {
        count(502);
        res.writeHead(502).end();
        return;
      }
      const target = new URL(req.url ?? '/', list[next++ % list.length]);
      forwarded++;
      const headers = { ...req.headers, host: target.host, 'content-length': String(body.length) };
      delete headers.connection;
      const up = http.request(target, { method: req.method, headers, agent, timeout: 15_000 }, (upRes) => {
        const parts: Buffer[] = [];
        upRes.on('data', (c: Buffer) => parts.push(c));
        upRes.on('end', () => {
          const status = upRes.statusCode ?? 502;
          count(status);
          if (status >= 200 && status < 300 && delivery) {
            acked.add(delivery);
            bodies.set(delivery, createHash('sha256').update(body).digest('hex'));
          }
          res.writeHead(status, { 'content-type': upRes.headers['content-type'] ?? 'application/json' }).end(Buffer.concat(parts));
        });
        upRes.on('error', () => {
          count(502);
          if (!res.headersSent) res.writeHead(502).end();
        });
      });
      const fail = () => {
        count(502);
        if (!res.headersSent) res.writeHead(502).end();
        else res.destroy();
      };
      up.on('error', fail);
      up.on('timeout', () => up.destroy(new Error('timeout')));
      up.end(body);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const proxy: DeliveryProxy = {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    targets,
    acked,
    statuses,
    get forwarded() {
      return forwarded;
    },
    close: () =>
      new Promise<void>((r) => {
        agent.destroy();
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
  t?.teardown(() => proxy.close());
  return proxy;
}
