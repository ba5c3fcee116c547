// A test's own HTTP endpoint on 127.0.0.1 (a receiver, a channel's destination, a fake service host).
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Teardown } from './teardown.ts';

/**
 * Listens on a free port of 127.0.0.1 and gives its base URL (http://127.0.0.1:PORT, no slash); at teardown every
 * open connection is cut and the server closed.
 */
export async function listenLocal(t: Teardown, server: Server): Promise<string> {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => {
    server.closeAllConnections();
    return new Promise<void>((r) => server.close(() => r()));
  });
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** A port of 127.0.0.1 nothing listens on now: for a process that must listen on the same port again after a restart. */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}
