// A channel's operator operations, each one function whichever door calls it (the JSON API in routes.ts and
// destination-routes.ts, the console's forms in src/console/routes/channels.ts, the CLI's verbs in cli.ts): its input
// checked by the one schema the API declares, the write, the channel told at once of what changed (announceChanges),
// and one audit entry (auditChange) of the same shape. A door only finds the channel, parses, calls and renders.
import { z } from 'zod';
import { auditChange, type Caller } from '../audit.ts';
import type { Config } from '../config.ts';
import { overridesOf } from '../db/channels.ts';
import type { Db } from '../db/index.ts';
import { note } from '../inputs.ts';
import { announceChanges, type Announcer } from './dispatch.ts';
import {
  addChannel,
  ChannelChoiceError,
  changeChannel,
  type FoundChannel,
  parseInput,
  presentChannel,
  presentOverride,
  removeChannel,
  removeOverride,
  setOverride,
} from './channels.ts';
import { parseAllowedHosts } from './address-guard.ts';
import {
  pauseDestination,
  removeDestination,
  resumeDestination,
  setDestination,
  viewDestination,
  type DestinationView,
} from './destinations.ts';

/** Nothing to act on: no override of that SKU, no destination (404; the CLI's refusal, exit 1). */
export class NotThere extends ChannelChoiceError {
  constructor(message: string) {
    super(404, message);
  }
}

/** What the operations need: the database, and the queue that tells a channel's destination to send. */
export type OperationDeps = Announcer & { db: Db; config: Pick<Config, 'CHANNEL_WEBHOOK_URL' | 'OUTBOUND_ALLOWED_HOSTS'> };

const PAUSE_REASON_LENGTH = 200;
/** A pause's input, whichever door: an optional reason, at most 200 characters; none says an operator paused it. */
export const pauseInput = z.object({
  reason: note(PAUSE_REASON_LENGTH).optional().describe(`Why it is paused (at most ${PAUSE_REASON_LENGTH} characters).`),
});
const OPERATOR_PAUSE = 'paused by an operator';

const where = (ch: FoundChannel) => ({ connection: { id: ch.connection_id, name: ch.connection }, target: `channel ${ch.name}` });

/** Sets a channel's override of a SKU; the channel hears the quantities it changed at once. */
export async function overrideSet(deps: OperationDeps, caller: Caller, ch: FoundChannel, sku: string, raw: unknown) {
  const [before] = await overridesOf(deps.db, [ch.id], [sku]);
  const set = await setOverride(deps.db, ch, sku, raw);
  await announceChanges(deps, set.changes);
  const result = { override: set.override, changes: set.changes.length };
  await auditChange(deps.db, caller, {
    action: 'channels.override.set',
    ...where(ch),
    target: `channel ${ch.name} sku ${sku}`,
    before: before ? { override: presentOverride(before) } : null,
    after: result,
  });
  return result;
}

/** Removes a channel's override of a SKU (404 when it has none); the channel hears the quantities it changed. */
export async function overrideRemove(deps: OperationDeps, caller: Caller, ch: FoundChannel, sku: string) {
  const [before] = await overridesOf(deps.db, [ch.id], [sku]);
  const changes = await removeOverride(deps.db, ch, sku);
  if (!changes) throw new NotThere(`channel "${ch.name}" has no override of SKU "${sku}"`);
  await announceChanges(deps, changes);
  const result = { removed: sku, changes: changes.length };
  await auditChange(deps.db, caller, {
    action: 'channels.override.remove',
    ...where(ch),
    target: `channel ${ch.name} sku ${sku}`,
    before: before ? { override: presentOverride(before) } : null,
    after: result,
  });
  return result;
}

async function destinationOrMissing(db: Db, ch: FoundChannel): Promise<DestinationView> {
  const view = await viewDestination(db, ch.id);
  if (!view) throw new NotThere(`channel ${ch.connection}/${ch.name} has no destination`);
  return view;
}

/** Pauses a channel's destination: nothing is POSTed until it is resumed, nothing is lost. */
export async function destinationPause(deps: OperationDeps, caller: Caller, ch: FoundChannel, raw: unknown): Promise<DestinationView> {
  const input = parseInput(pauseInput, raw ?? {});
  const before = await destinationOrMissing(deps.db, ch);
  const reason = input.reason?.trim() || OPERATOR_PAUSE;
  if (!(await pauseDestination(deps.db, ch.id, reason))) throw new NotThere(`channel ${ch.connection}/${ch.name} has no destination`);
  const view = await destinationOrMissing(deps.db, ch);
  await auditChange(deps.db, caller, {
    action: 'channels.destination.pause',
    ...where(ch),
    before: { destination: before },
    after: { destination: view },
  });
  return view;
}

/** Resumes a channel's destination; what waits is sent at once, from where it stopped. */
export async function destinationResume(deps: OperationDeps, caller: Caller, ch: FoundChannel): Promise<DestinationView> {
  const before = await destinationOrMissing(deps.db, ch);
  if (!(await resumeDestination(deps.db, ch.id))) throw new NotThere(`channel ${ch.connection}/${ch.name} has no destination`);
  await announceChanges(deps, [{ channel_id: ch.id }]);
  const view = await destinationOrMissing(deps.db, ch);
  await auditChange(deps.db, caller, {
    action: 'channels.destination.resume',
    ...where(ch),
    before: { destination: before },
    after: { destination: view },
  });
  return view;
}

/** Adds a channel to a connection; its quantities are computed at once and its destination, if any, told. */
export async function channelAdd(deps: OperationDeps, caller: Caller, connection: { id: number; name: string }, raw: unknown) {
  const made = await addChannel(deps.db, connection.id, raw);
  await announceChanges(deps, [{ channel_id: made.channel.id }]);
  const result = { channel: presentChannel({ ...made.channel, connection: connection.name }), recomputed: made.recomputed };
  await auditChange(deps.db, caller, { action: 'channels.add', connection, target: `channel ${made.channel.name}`, after: result });
  return result;
}

/** Changes a channel's rules; its quantities are computed again and the channel hears what changed at once. */
export async function channelUpdate(deps: OperationDeps, caller: Caller, ch: FoundChannel, raw: unknown) {
  const done = await changeChannel(deps.db, ch, raw);
  await announceChanges(deps, [{ channel_id: ch.id }]);
  const result = { channel: presentChannel({ ...done.channel, connection: ch.connection }), recomputed: done.recomputed };
  await auditChange(deps.db, caller, { action: 'channels.change', ...where(ch), before: { channel: presentChannel(ch) }, after: result });
  return result;
}

/** Removes a channel with its quantities, history and overrides (409 for a connection's last channel). */
export async function channelRemove(deps: { db: Db }, caller: Caller, ch: FoundChannel) {
  await removeChannel(deps.db, ch);
  const result = { removed: presentChannel(ch) };
  await auditChange(deps.db, caller, { action: 'channels.remove', ...where(ch), before: { channel: presentChannel(ch) } });
  return result;
}

/**
 * Sets a channel's destination (a secret is made, and answered once, when none is given); what waits is sent at
 * once. The entry keeps the destination as it is shown (its host), never the URL's path or the secret.
 */
export async function destinationSet(deps: OperationDeps & { key: Buffer }, caller: Caller, ch: FoundChannel, raw: unknown) {
  const before = await viewDestination(deps.db, ch.id);
  const set = await setDestination(deps.db, deps.key, ch.id, raw, parseAllowedHosts(deps.config.OUTBOUND_ALLOWED_HOSTS));
  await announceChanges(deps, [{ channel_id: ch.id }]);
  await auditChange(deps.db, caller, {
    action: 'channels.destination.set',
    ...where(ch),
    before: { destination: before },
    after: { destination: set.view },
  });
  return { destination: set.view, ...(set.secret ? { secret: set.secret } : {}) };
}

/** Removes a channel's destination (404 when it has none): its changes are kept for its feed. */
export async function destinationRemove(deps: { db: Db }, caller: Caller, ch: FoundChannel) {
  const before = await destinationOrMissing(deps.db, ch);
  if (!(await removeDestination(deps.db, ch.id))) throw new NotThere(`channel ${ch.connection}/${ch.name} has no destination`);
  await auditChange(deps.db, caller, { action: 'channels.destination.remove', ...where(ch), before: { destination: before } });
  return { removed: true as const };
}
