// A TCP forwarder with a fixed address whose target can move: processes keep one DATABASE_URL while the
// PostgreSQL behind it is killed and restarted on another port (as a managed database keeps its address).
import net from 'node:net';
import type { Teardown } from './teardown.ts';

export interface TcpProxy {
  port: number;
  /** Where new connections go; existing ones are not moved. */
  target: { host: string; port: number };
  /** Rewrites a postgres:// URL to go through the proxy. */
  wrap(url: string): string;
  /** Destroys every open connection (both sides). */
  cutAll(): void;
  /** Stops listening and destroys every connection: the address refuses, as an unreachable database's would. */
  close(): Promise<void>;
  /** Listens again, on the same port, after `close`. */
  reopen(): Promise<void>;
}

export async function startTcpProxy(t: Teardown | null, target: { host: string; port: number }): Promise<TcpProxy> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(proxy.target.port, proxy.target.host);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      s.on('error', () => s.destroy());
    }
    client.pipe(upstream).pipe(client);
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as net.AddressInfo).port;
  const proxy: TcpProxy = {
    port,
    target,
    wrap(url) {
      const u = new URL(url);
      u.hostname = '127.0.0.1';
      u.port = String(port);
      return u.toString();
    },
    cutAll() {
      for (const s of sockets) s.destroy();
    },
    close: () =>
      new Promise<void>((r) => {
        proxy.cutAll();
        server.close(() => r());
      }),
    reopen: () => new Promise<void>((r) => server.listen(port, '127.0.0.1', r)),
  };
  t?.teardown(() => proxy.close());
  return proxy;
}
