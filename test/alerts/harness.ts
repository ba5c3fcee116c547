// What the alert tests share: a local HTTP endpoint that receives alert notices (and checks each one with the
// `standardwebhooks` package from the registry, never with our own code), and a whsec_ secret.
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import { Webhook } from 'standardwebhooks';
import { listenLocal } from '../support/http.ts';
import type { Teardown } from '../support/teardown.ts';

export interface Notice {
  id: string;
  type: string;
  data: { key: string; message: string; state: string; severity: string; count: number; connection: string | null };
}

export interface AlertEndpoint {
  url: string;
  /** Verified notices, in arrival order (a POST that does not verify fails the test through `bad`). */
  notices: Notice[];
  /** POSTs that did not verify. */
  bad: string[];
  /** Every POST received, answered or not. */
  posts: number;
  /** What the endpoint answers next (default 200). */
  status: number;
  /** Waits until a notice matches (bounded). */
  waitFor(what: string, match: (n: Notice) => boolean, timeoutMs?: number): Promise<Notice>;
}

export const newSecret = () => `whsec_${randomBytes(32).toString('base64')}`;

/** A real HTTP endpoint on 127.0.0.1 receiving alert notices signed with `secret`. */
export async function alertEndpoint(t: Teardown, secret: string): Promise<AlertEndpoint> {
  const wh = new Webhook(secret);
  const ep: AlertEndpoint = {
    url: '',
    notices: [],
    bad: [],
    posts: 0,
    status: 200,
    async waitFor(what, match, timeoutMs = 60_000) {
      const end = Date.now() + timeoutMs;
      for (;;) {
        const hit = ep.notices.find(match);
        if (hit) return hit;
        if (Date.now() > end)
          throw new Error(`timed out waiting for ${what}; got ${JSON.stringify(ep.notices.map((n) => `${n.type} ${n.data.key}`))}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    },
  };
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      ep.posts++;
      const body = Buffer.concat(chunks).toString('utf8');
      const status = ep.status;
      if (status >= 200 && status < 300) {
        try {
          const payload = wh.verify(body, req.headers as Record<string, string>) as Omit<Notice, 'id'>;
          ep.notices.push({ id: String(req.headers['webhook-id']), ...payload });
        } catch (err) {
          ep.bad.push(`${(err as Error).message}: ${body.slice(0, 200)}`);
        }
      }
      res.statusCode = status;
      res.end();
    });
  });
  ep.url = `${await listenLocal(t, server)}/alerts`;
  return ep;
}
