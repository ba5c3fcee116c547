// A sales channel's endpoint for the compose demo (deploy/compose.yaml, profile sandbox): it checks each POST's
// Standard Webhooks signature (CHANNEL_WEBHOOK_SECRET) and prints the quantities it was told, one line a variant:
//   channel-endpoint: default SKU-0007 = 12 (tracked, listed)
// Plain Node, no dependencies: the image's node runs it from a read-only mount.
import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer } from 'node:http';

const secrets = (process.env.CHANNEL_WEBHOOK_SECRET ?? '').split(' ').filter(Boolean);
const keys = secrets.map((s) => Buffer.from(s.replace(/^whsec_/, ''), 'base64'));
const port = Number(process.env.ENDPOINT_PORT ?? 8080);

function verified(headers, body) {
  const id = headers['webhook-id'];
  const timestamp = headers['webhook-timestamp'];
  const given = String(headers['webhook-signature'] ?? '')
    .split(' ')
    .map((s) => Buffer.from(s.replace(/^v1,/, ''), 'base64'));
  if (!id || !timestamp || Math.abs(Date.now() / 1000 - Number(timestamp)) > 300) return false;
  return keys.some((key) => {
    const mine = createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest();
    return given.some((g) => g.length === mine.length && timingSafeEqual(g, mine));
  });
}

createServer((req, res) => {
  let body = '';
  req.setEncoding('utf8');
  req.on('data', (d) => {
    body += d;
  });
  req.on('end', () => {
    if (req.method !== 'POST' || !verified(req.headers, body)) {
      console.log(`channel-endpoint: refused ${req.method} ${req.url} (signature)`);
      res.writeHead(400).end();
      return;
    }
    const event = JSON.parse(body);
    for (const c of event.data?.changes ?? [])
      console.log(
        `channel-endpoint: ${event.data.channel} ${c.sku ?? `variant ${c.variant_id}`} = ${c.quantity}` +
          ` (${[c.tracked ? 'tracked' : 'untracked', c.listed ? 'listed' : 'unlisted'].join(', ')})`,
      );
    for (const e of event.data?.events ?? []) console.log(`channel-endpoint: ${event.data.channel} order event ${e.type ?? e.kind}`);
    res.writeHead(200).end('ok');
  });
}).listen(port, '0.0.0.0', () => console.log(`channel-endpoint: listening on port ${port}`));
