// The demo's sales channel: an endpoint in the process, like the sandbox, that the demo connection's `default`
// channel POSTs its stock and order changes to (CHANNEL_WEBHOOK_URL), so a newcomer sees what leaves the program.
// Each POST is checked with the `standardwebhooks` package (the field's own library, not our signer checking itself)
// and kept, the newest KEPT of them, for the console's Demo channel page.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import type { Logger } from '../log.ts';
import type { DemoPost } from '../server.ts';

const KEPT = 200;
const MAX_BODY = 4 * 1024 * 1024;
export const DEMO_CHANNEL_PATH = '/demo-channel';

export interface DemoChannel {
  url: string;
  /** The POSTs received, newest first. */
  posts(): DemoPost[];
  close(): Promise<void>;
}

/** Listens on `port` of 127.0.0.1 (0: a free one); POSTs signed with `secret` (whsec_...) are verified. */
export async function startDemoChannel(opts: { port: number; secret: string; log: Logger }): Promise<DemoChannel> {
  const verifier = new Webhook(opts.secret);
  const kept: DemoPost[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (d: Buffer) => {
      size += d.length;
      if (size <= MAX_BODY) chunks.push(d);
    });
    req.on('end', () => {
      if (req.method !== 'POST' || req.url !== DEMO_CHANNEL_PATH) {
        res.writeHead(404).end();
        return;
      }
      const body = Buffer.concat(chunks).toString('utf8');
      let payload: unknown = null;
      let problem: string | null = null;
      try {
        payload = verifier.verify(body, req.headers as Record<string, string>);
      } catch (err) {
        problem = (err as Error).message;
        try {
          payload = JSON.parse(body);
        } catch {
          payload = body.slice(0, 2000);
        }
      }
      const type = (payload as { type?: unknown } | null)?.type;
      kept.unshift({
        at: new Date().toISOString(),
        id: String(req.headers['webhook-id'] ?? ''),
        type: typeof type === 'string' ? type : '(no type)',
        verified: problem === null,
        problem,
        payload,
      });
      kept.length = Math.min(kept.length, KEPT);
      if (problem) opts.log.warn({ problem }, 'demo channel: a POST did not verify');
      // As a channel does: 2xx takes what was verified; a bad signature is refused (the sender retries).
      res.writeHead(problem ? 400 : 204).end();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}${DEMO_CHANNEL_PATH}`,
    posts: () => [...kept],
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
