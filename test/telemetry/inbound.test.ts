// No caller chooses our trace: every HTTP request, on whatever route and however its path is spelled, is the root
// of a trace of its own that links the caller's traceparent, sampled or not, and never continues it. The spans are
// collected in this process from the real console and receiver routes (an SDK with a span processor of ours).
import { randomBytes } from 'node:crypto';
import t from 'tap';
import { NodeSDK, type NodeSDKConfiguration } from '@opentelemetry/sdk-node';
import { tracingStarted } from '../../src/telemetry/spans.ts';
import { addConnection, consoleServer } from '../console/harness.ts';

type Processor = NonNullable<NodeSDKConfiguration['spanProcessors']>[number];
type Ended = Parameters<Processor['onEnd']>[0];

const TOKEN = 'inbound-trace-test-operator-token-01234';

t.test("a caller's traceparent is linked, never continued, on every route", async (t) => {
  Object.assign(process.env, { OTEL_METRICS_EXPORTER: 'none', OTEL_LOGS_EXPORTER: 'none', OTEL_PROPAGATORS: 'tracecontext' });
  const ended: Ended[] = [];
  const collect: Processor = {
    onStart: () => {},
    onEnd: (span) => ended.push(span),
    forceFlush: async () => {},
    shutdown: async () => {},
  };
  const sdk = new NodeSDK({ spanProcessors: [collect] });
  sdk.start();
  tracingStarted();
  t.teardown(() => sdk.shutdown());

  const s = await consoleServer(t, { token: TOKEN, receiver: true });
  await addConnection(s.db, 'demo');
  const requests: [string, string, RequestInit?][] = [
    ['POST', '/webhooks/demo'],
    ['POST', '/WEBHOOKS/demo'],
    ['GET', '/api/status'],
    ['GET', '/API/status'],
    ['POST', '/login', { body: new URLSearchParams({ token: 'wrong' }) }],
    ['GET', '/auth/oidc/start'],
    ['GET', '/auth/oidc/callback?code=x&state=y'],
    ['GET', '/api/status', { headers: { authorization: `Bearer ${TOKEN}` } }],
  ];
  for (const sampled of ['01', '00'])
    for (const [method, path, init] of requests) {
      const traceId = randomBytes(16).toString('hex');
      const spanId = randomBytes(8).toString('hex');
      const headers = { ...(init?.headers as Record<string, string>), traceparent: `00-${traceId}-${spanId}-${sampled}` };
      const res = await fetch(`${s.base}${path}`, { ...init, method, headers, redirect: 'manual' });
      await res.arrayBuffer();
      const what = `${method} ${path}${init?.headers ? ' (signed in)' : ''}, flags ${sampled}`;
      const mine = ended.filter((e) => e.spanContext().traceId === traceId || e.links.some((l) => l.context.traceId === traceId));
      t.equal(mine.length, 1, `${what}: one span (answered ${res.status})`);
      const span = mine[0];
      if (!span) continue;
      t.not(span.spanContext().traceId, traceId, `${what}: in a trace of our own`);
      t.notOk(span.parentSpanContext, `${what}: a root`);
      t.same(
        span.links.map((l) => [l.context.traceId, l.context.spanId]),
        [[traceId, spanId]],
        `${what}: linking the caller's span`,
      );
    }
});
