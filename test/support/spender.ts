// Other spenders of the same quota (real-service-notes section 7): the service's rate limit belongs to the
// application and account together, so a script or a second deployment using another token of the same
// application spends the window commerce-sync spends. `startSpender` is such a script; `recordingProxy` stands
// between commerce-sync and the sandbox and keeps every request of ours with the rate headers of its answer, so a
// test can count our 429s per window (the sandbox's own counters mix ours with the spender's).
import http from 'node:http';
import { listenLocal } from './http.ts';
import type { Teardown } from './teardown.ts';

/** One request of ours as the proxy saw it. */
export interface Seen {
  method: string;
  path: string;
  /** Real epoch ms it reached the proxy, and its answer came back (null: no answer). */
  sent: number;
  answered: number | null;
  status: number | null;
  remaining: number | null;
  /** X-Rate-Limit-Reset, epoch seconds: names the window the request was counted in. */
  reset: number | null;
}

export async function recordingProxy(t: Teardown, target: string): Promise<{ url: string; seen: Seen[] }> {
  const seen: Seen[] = [];
  const server = http.createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const entry: Seen = {
      method: req.method ?? 'GET',
      path: req.url ?? '/',
      sent: Date.now(),
      answered: null,
      status: null,
      remaining: null,
      reset: null,
    };
    seen.push(entry);
    try {
      const headers = new Headers();
      for (const [k, v] of Object.entries(req.headers)) {
        if (typeof v === 'string' && k !== 'host' && k !== 'connection' && k !== 'content-length') headers.set(k, v);
      }
      const up = await fetch(`${target}${req.url}`, {
        method: req.method,
        headers,
        body: chunks.length ? Buffer.concat(chunks) : undefined,
        redirect: 'manual',
      });
      const body = Buffer.from(await up.arrayBuffer());
      entry.answered = Date.now();
      entry.status = up.status;
      const num = (name: string) => {
        const v = up.headers.get(name);
        return v === null ? null : Number(v);
      };
      entry.remaining = num('x-rate-limit-remaining');
      entry.reset = num('x-rate-limit-reset');
      const out: Record<string, string> = {};
      up.headers.forEach((v, k) => {
        if (!['content-length', 'content-encoding', 'transfer-encoding', 'connection', 'keep-alive'].includes(k)) out[k] = v;
      });
      res.writeHead(up.status, out);
      res.end(body);
    } catch {
      res.destroy();
    }
  });
  return { url: await listenLocal(t, server), seen };
}

export interface SpenderOptions {
  /** Requests per window the service allows (the sandbox's rateLimit). */
  limit: number;
  /** Real length of a window (the sandbox's rateWindowSeconds / timeScale), ms. */
  windowMs: number;
  /** Part of every window it spends. */
  share: number;
  /**
   * steady: one request at a time, spread over the window, to the end of it (it races us for the last slots);
   * burst: its whole share at the start of the window, `parallel` requests at a time.
   */
  mode: 'steady' | 'burst';
  /** steady: the part of the window its share is spread over (0.85 when absent). */
  spread?: number;
  /** burst: requests at a time (4 when absent). */
  parallel?: number;
}

export interface Spender {
  /** Per window (X-Rate-Limit-Reset, epoch seconds): its answered requests and its own 429s. */
  byWindow: Map<number, { ok: number; limited: number }>;
  stop(): Promise<void>;
}

/**
 * A script of the same application: it spends `share` of every window, learning the window from its own answers'
 * headers; a 429 of its own means the window is spent, and it waits for the reset.
 */
export function startSpender(url: string, token: string, o: SpenderOptions): Spender {
  const perWindow = Math.floor(o.share * o.limit);
  const gap = (o.windowMs * (o.spread ?? 0.85)) / perWindow;
  const byWindow = new Map<number, { ok: number; limited: number }>();
  let stopped = false;
  let resetAt = 0;
  let sleeping: { timer: NodeJS.Timeout; done: () => void } | null = null;
  const sleep = (ms: number) =>
    new Promise<void>((done) => {
      const timer = setTimeout(() => {
        sleeping = null;
        done();
      }, ms);
      sleeping = { timer, done };
    });
  const one = async (): Promise<{ ok: boolean; w: { ok: number; limited: number } }> => {
    const res = await fetch(`${url}/variants?limit=1`, { headers: { Authorization: `Bearer ${token}` } });
    await res.arrayBuffer();
    const reset = Number(res.headers.get('x-rate-limit-reset'));
    resetAt = Math.max(resetAt, reset * 1000);
    const w = byWindow.get(reset) ?? { ok: 0, limited: 0 };
    byWindow.set(reset, w);
    if (res.status === 429) w.limited++;
    else w.ok++;
    return { ok: res.status !== 429, w };
  };
  // Wait past the reset (the header is in whole seconds) for the next window.
  const untilReset = () => sleep(Math.max(0, resetAt - Date.now()) + 20);
  const run = (async () => {
    while (!stopped) {
      if (o.mode === 'steady') {
        const r = await one();
        await (r.ok && r.w.ok < perWindow ? sleep(gap) : untilReset());
        continue;
      }
      // burst: `parallel` lanes share the window's part; a lane stops at the share or a 429.
      const first = await one();
      if (first.ok) {
        const w = first.w;
        let out = false;
        await Promise.all(
          Array.from({ length: o.parallel ?? 4 }, async () => {
            while (!stopped && !out && w.ok < perWindow) {
              const r = await one();
              if (!r.ok || r.w !== w) out = true;
            }
          }),
        );
      }
      await untilReset();
    }
  })();
  return {
    byWindow,
    stop: async () => {
      stopped = true;
      if (sleeping) {
        clearTimeout(sleeping.timer);
        sleeping.done();
      }
      await run;
    },
  };
}

/** Our requests per window (by the X-Rate-Limit-Reset of their answers): answered, and refused with 429. */
export function perWindow(seen: Seen[]): Map<number, { ok: number; limited: number }> {
  const out = new Map<number, { ok: number; limited: number }>();
  for (const s of seen) {
    if (s.status === null || s.reset === null) continue;
    const w = out.get(s.reset) ?? { ok: 0, limited: 0 };
    out.set(s.reset, w);
    if (s.status === 429) w.limited++;
    else w.ok++;
  }
  return new Map([...out].sort(([a], [b]) => a - b));
}
