// POST /webhooks/:connection as the OpenAPI document describes it. The receiver (src/receiver/) reads the raw body
// itself (its signature is over the bytes), so its route is mounted there and described here, from what
// src/receiver/receiver.ts and payload.ts answer and accept.
import { z } from 'zod';
import type { DescribedOperation } from './registry.ts';

/** What the service POSTs; only `event` and `object_id` are required, other fields are kept as they come. */
const delivery = z.looseObject({
  event: z.string().describe('The event, e.g. `variants/update`.'),
  object_id: z.union([z.number().int(), z.string()]).describe('The id of the object the event is about.'),
  timestamp: z.union([z.number().int(), z.string()]).optional().describe('When it happened, in seconds since the epoch.'),
  resource_url: z.string().optional().describe('Where the object can be read.'),
});

export const webhookOperation: DescribedOperation = {
  method: 'post',
  path: '/webhooks/:connection',
  summary: 'Receive a webhook delivery from the service',
  description:
    'Authenticated by its signature, not by an operator: `X-Service-Signature` is the Base64 HMAC-SHA256 of the raw body ' +
    'under COMMERCE_CLIENT_SECRET (or COMMERCE_CLIENT_SECRET_PREVIOUS while it rotates). `X-Service-Delivery` is the ' +
    "delivery's id; a delivery stored once is acknowledged again as a duplicate. Stored and queued before the answer.",
  params: { connection: 'The name of the connection the subscription was made for.' },
  headers: [
    { name: 'X-Service-Signature', required: true, description: 'Base64 HMAC-SHA256 of the raw body, keyed with the client secret.' },
    {
      name: 'X-Service-Delivery',
      required: false,
      description: "The delivery's id (retries keep it); without it, the body's digest identifies the delivery.",
    },
  ],
  body: delivery,
  answers: {
    200: z.object({
      ok: z.literal(true),
      duplicate: z.literal(true).optional().describe('Present when the delivery had been stored already.'),
    }),
  },
  // Malformed, stale or future-dated (400); signature (401); unknown (404) or disabled (410, the service then
  // deletes the subscription) connection; body too large (413); database unavailable or shutting down (503).
  problems: [400, 401, 404, 410, 413, 503],
};
