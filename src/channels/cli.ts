// commerce-sync channels: channels, their rules, overrides, holds and destinations (docs/channels.md). The verbs
// about channel orders (holds, orders): order-cli.ts.
import { ClientState } from '../api/client-state.ts';
import { chooseConnection, ConnectionChoiceError } from '../api/connections.ts';
import { auditCommand, cliCaller } from '../audit.ts';
import { formatTable, sharedOptions, stringOption, UsageError, type CommandContext, type CommandModule } from '../command.ts';
import { listChannels, listOverrides } from '../db/channels.ts';
import { openDatabase, type Db } from '../db/index.ts';
import { OperationFailed } from '../push/errors.ts';
import { ChannelChoiceError, ChannelInputError, findChannel, presentChannel, presentOverride } from './channels.ts';
import { viewDestination } from './destinations.ts';
import {
  channelAdd,
  channelUpdate,
  channelRemove,
  destinationPause,
  destinationRemove,
  destinationResume,
  destinationSet,
  NotThere,
  type OperationDeps,
  overrideRemove,
  overrideSet,
} from './operations.ts';
import { startBoss, stopBoss } from '../queue/boss.ts';
import { createQueues } from '../queue/queues.ts';
import { HoldConflict } from './holds.ts';
import { runHolds, runOrders, type Verb } from './order-cli.ts';
import { CancelRefused } from './orders.ts';

/**
 * Runs channel operations (operations.ts) with a queue to tell a channel's destination at once, as the API's do:
 * a change made here reaches the channel without waiting for anything else to move.
 */
async function withOperations<T>(ctx: CommandContext, db: Db, databaseUrl: string, run: (ops: OperationDeps) => Promise<T>): Promise<T> {
  const boss = await startBoss(databaseUrl, ctx.log, { supervise: false, schedule: false, max: 2 });
  try {
    await createQueues(boss);
    return await run({ db, boss, config: ctx.config });
  } finally {
    await stopBoss(boss);
  }
}

/** Verbs that are operations: each writes its own audit entry (operations.ts), so the command writes none. */
const OPERATIONS = ['add', 'change', 'remove', 'override', 'destination'];

const VERBS =
  'list | show NAME | add NAME | change NAME | remove NAME | override set NAME SKU MODE | override remove NAME SKU | holds list [NAME] | holds add NAME ORDER_ID --line SKU=QTY | holds cancel NAME ORDER_ID | orders show|cancel NAME CHANNEL_ORDER_ID | destination show|set|pause|resume|remove NAME';

const text = (v: CommandContext['values'], k: string) => (typeof v[k] === 'string' ? (v[k] as string) : undefined);

/** The channel rules the options give, as the API takes them; a value that cannot be one is named. */
function rulesFromOptions(v: CommandContext['values']): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const locations = text(v, 'locations');
  if (locations !== undefined) {
    if (locations === 'all') out.locations = null;
    else if (/^\d+(,\d+)*$/.test(locations)) out.locations = locations.split(',').map(Number);
    else throw new UsageError(`--locations must be comma-separated location ids or "all", not "${locations}"`);
  }
  const buffer = text(v, 'buffer');
  if (buffer !== undefined) out.buffer_units = buffer;
  const percent = text(v, 'buffer-percent');
  if (percent !== undefined) out.buffer_percent = percent === 'none' ? null : percent.replace(/%$/, '');
  const cap = text(v, 'cap-max-online');
  if (cap !== undefined) {
    if (!['yes', 'no', 'true', 'false'].includes(cap)) throw new UsageError(`--cap-max-online must be yes or no, not "${cap}"`);
    out.cap_max_online = cap === 'yes' || cap === 'true';
  }
  return out;
}

function channelLines(rows: ReturnType<typeof presentChannel>[]): string[] {
  return formatTable([
    ['CONNECTION', 'CHANNEL', 'LOCATIONS', 'BUFFER', 'CAP MAX_ONLINE', 'OVERRIDES', 'HOLDS', 'APPLIED'],
    ...rows.map((c) => [
      c.connection ?? '-',
      c.name,
      c.locations ? c.locations.join(',') : 'all',
      c.buffer_percent === null ? c.buffer_units : `${c.buffer_percent}% (at least ${c.buffer_units})`,
      c.cap_max_online ? 'yes' : 'no',
      String(c.overrides ?? 0),
      String(c.active_holds ?? 0),
      c.applied ? 'yes' : 'recomputing',
    ]),
  ]);
}

/** Runs a verb, turning bad input into a usage error (exit 2) and a refusal into a message (exit 1). */
async function refusing(ctx: CommandContext, run: () => Promise<number | undefined>): Promise<number> {
  try {
    return (await run()) ?? 0;
  } catch (err) {
    if (err instanceof ChannelInputError) throw new UsageError(err.problems.join('\n  '));
    if (err instanceof NotThere) {
      console.error(`commerce-sync ${ctx.name}: ${err.message}`);
      return 1;
    }
    if (err instanceof OperationFailed) throw new UsageError(err.message);
    if (err instanceof ConnectionChoiceError || (err instanceof ChannelChoiceError && err.status !== 409))
      throw new UsageError(err.message);
    if (err instanceof ChannelChoiceError || err instanceof HoldConflict || err instanceof CancelRefused) {
      console.error(`commerce-sync ${ctx.name}: ${err.message}`);
      return 1;
    }
    throw err;
  }
}

async function runChannels(ctx: CommandContext, db: Db, databaseUrl: string): Promise<number> {
  const [verb, ...args] = ctx.positionals;
  const v = ctx.values;
  const connection = text(v, 'connection');
  const want = (n: number, usage: string) => {
    if (args.length !== n || args.some((a) => !a)) throw new UsageError(`channels ${verb} takes ${usage}`);
  };
  const print = (value: unknown, lines: () => string[]) => {
    if (v.json) ctx.out(JSON.stringify(value, null, 2));
    else for (const l of lines()) ctx.out(l);
  };
  const verbContext: Verb = { ctx, db, databaseUrl, connection, text: (k) => text(v, k), print };
  // A channel as it is after a change of its rules, and what the recomputation did.
  const printChannel = (row: ReturnType<typeof presentChannel>, r: { changes: number; ms: number }) => {
    print({ channel: row, recomputed: r }, () => [...channelLines([row]), `recomputed: ${r.changes} quantities changed in ${r.ms} ms`]);
  };
  switch (verb) {
    case 'list': {
      want(0, 'no argument');
      const conn = connection ? await chooseConnection(db, connection) : undefined;
      const rows = (await listChannels(db, { connectionId: conn?.id })).map(presentChannel);
      print(rows, () => (rows.length ? channelLines(rows) : ['no channels']));
      return 0;
    }
    case 'show': {
      want(1, 'the channel name');
      const ch = await findChannel(db, args[0]!, connection);
      const overrides = (await listOverrides(db, ch.id)).map(presentOverride);
      print({ channel: presentChannel(ch), overrides }, () => [
        ...channelLines([presentChannel(ch)]),
        '',
        ...(overrides.length
          ? formatTable([
              ['SKU', 'OVERRIDE', 'QUANTITY', 'BUFFER'],
              ...overrides.map((o) => [
                o.sku,
                o.mode,
                o.quantity ?? '-',
                o.mode === 'buffer'
                  ? o.buffer_percent === null
                    ? o.buffer_units!
                    : `${o.buffer_percent}% (at least ${o.buffer_units})`
                  : '-',
              ]),
            ])
          : ['no overrides']),
      ]);
      return 0;
    }
    case 'add': {
      want(1, 'the new channel name');
      const conn = await chooseConnection(db, connection);
      const made = await withOperations(ctx, db, databaseUrl, (ops) =>
        channelAdd(ops, cliCaller(), conn, { name: args[0], ...rulesFromOptions(v) }),
      );
      printChannel(made.channel, made.recomputed);
      return 0;
    }
    case 'change': {
      want(1, 'the channel name and the options to change');
      const ch = await findChannel(db, args[0]!, connection);
      const done = await withOperations(ctx, db, databaseUrl, (ops) => channelUpdate(ops, cliCaller(), ch, rulesFromOptions(v)));
      printChannel(done.channel, done.recomputed);
      return 0;
    }
    case 'remove': {
      want(1, 'the channel name');
      const ch = await findChannel(db, args[0]!, connection);
      const removed = await channelRemove({ db }, cliCaller(), ch);
      print(removed, () => [`removed channel ${ch.name} of ${ch.connection}`]);
      return 0;
    }
    case 'override': {
      const [sub, name, sku, mode] = args;
      if (sub === 'set') {
        if (args.length !== 4) throw new UsageError('channels override set takes NAME SKU MODE (exclude, zero, fixed or buffer)');
        const ch = await findChannel(db, name!, connection);
        const input: Record<string, unknown> = { mode };
        if (text(v, 'quantity') !== undefined) input.quantity = text(v, 'quantity');
        if (text(v, 'buffer') !== undefined) input.buffer_units = text(v, 'buffer');
        if (text(v, 'buffer-percent') !== undefined) input.buffer_percent = text(v, 'buffer-percent')!.replace(/%$/, '');
        const set = await withOperations(ctx, db, databaseUrl, (ops) => overrideSet(ops, cliCaller(), ch, sku!, input));
        print(set, () => [
          `${ch.name}: ${sku} ${set.override.mode}${set.override.quantity !== null ? ` ${set.override.quantity}` : ''}; ${set.changes} quantities changed`,
        ]);
        return 0;
      }
      if (sub === 'remove') {
        if (args.length !== 3) throw new UsageError('channels override remove takes NAME SKU');
        const ch = await findChannel(db, name!, connection);
        const removed = await withOperations(ctx, db, databaseUrl, (ops) => overrideRemove(ops, cliCaller(), ch, sku!));
        print(removed, () => [`${ch.name}: override of ${sku} removed; ${removed.changes} quantities changed`]);
        return 0;
      }
      throw new UsageError('channels override takes set NAME SKU MODE, or remove NAME SKU');
    }
    case 'holds':
      return runHolds(verbContext, args);
    case 'orders':
      return runOrders(verbContext, args);
    case 'destination': {
      const [sub, name] = args;
      const usage =
        'channels destination takes show NAME, set NAME --url URL [--secret S] [--from now], pause NAME [--reason R], resume NAME or remove NAME';
      if (args.length !== 2 || !['show', 'set', 'pause', 'resume', 'remove'].includes(sub!)) throw new UsageError(usage);
      const ch = await findChannel(db, name!, connection);
      const id = ch.id;
      let secret: string | null = null;
      if (sub === 'set') {
        const input = {
          url: text(v, 'url'),
          ...(text(v, 'secret') ? { secret: text(v, 'secret') } : {}),
          ...(text(v, 'from') ? { from: text(v, 'from') } : {}),
          ...(text(v, 'kinds') ? { kinds: text(v, 'kinds') } : {}),
        };
        const key = new ClientState().key(ctx.config);
        secret =
          (await withOperations(ctx, db, databaseUrl, (ops) => destinationSet({ ...ops, key }, cliCaller(), ch, input))).secret ?? null;
      } else if (sub === 'pause' || sub === 'resume') {
        await withOperations(ctx, db, databaseUrl, (ops) =>
          sub === 'pause' ? destinationPause(ops, cliCaller(), ch, { reason: text(v, 'reason') }) : destinationResume(ops, cliCaller(), ch),
        );
      } else if (sub === 'remove') {
        print(await destinationRemove({ db }, cliCaller(), ch), () => ['destination removed']);
        return 0;
      }
      const view = await viewDestination(db, id);
      if (!view) {
        console.error(`commerce-sync channels: channel ${ch.connection}/${ch.name} has no destination`);
        return 1;
      }
      // A worker sends what waits within a minute (the maintenance minute), at once after a change.
      print({ destination: view, ...(secret ? { secret } : {}) }, () => [
        `${ch.connection}/${ch.name} -> ${view.host}: ${view.state}${view.behind ? `, ${view.behind} changes behind` : ''}`,
        ...(view.paused_reason ? [`paused: ${view.paused_reason}`] : []),
        ...(view.failing_since
          ? [`failing since ${new Date(view.failing_since).toISOString()}: ${view.failures} POSTs, last ${view.last_error}`]
          : []),
        ...(secret ? [`secret (shown once; give it to the endpoint): ${secret}`] : []),
        ...view.posts
          .slice(0, 5)
          .map(
            (p) =>
              `  ${new Date(p.at).toISOString()} changes ${p.first_change}-${p.last_change} (${p.changes}) ${p.ok ? 'ok' : `failed: ${p.error}`}`,
          ),
      ]);
      return 0;
    }
    default:
      throw new UsageError(verb ? `unknown verb "${verb}": ${VERBS}` : `say what to do: ${VERBS}`);
  }
}

export const commands: CommandModule['commands'] = {};

commands.channels = {
  summary:
    'Manage sales channels: their locations, safety buffer and max_online cap, per-SKU overrides, stock held for channel orders, and the destination their changes are POSTed to.',
  args: VERBS,
  positionals: true,
  options: {
    connection: sharedOptions.connection('the connection (needed when the channel name, or several connections, leave it open)'),
    locations: stringOption('L', 'IDS', 'add/change: location ids that count, comma-separated, or "all"'),
    buffer: stringOption('b', 'N', 'add/change/override: safety buffer in units (with --buffer-percent: the least)'),
    'buffer-percent': stringOption(
      'p',
      'P',
      'add/change/override: buffer as a percentage of what is available, rounded up to a unit ("none": units only)',
    ),
    'cap-max-online': stringOption('m', 'yes|no', "add/change: whether a variant's max_online caps the quantity (default yes)"),
    quantity: stringOption('q', 'N', 'override set ... fixed: the quantity to show'),
    line: stringOption('l', 'SKU=QTY', 'holds add: a SKU and quantity to hold; repeatable', true),
    state: stringOption('s', 'STATE', 'holds list: active (default), ended or all'),
    url: stringOption('u', 'URL', 'destination set: where the changes are POSTed'),
    secret: stringOption(
      'S',
      'WHSEC',
      'destination set: whsec_ secret(s), the new first while one rotates (default: one is made and shown once)',
    ),
    from: stringOption('f', 'start|now', 'destination set: every quantity (start, default) or changes from now'),
    kinds: stringOption('k', 'stock|orders|both', 'destination set: what it wants POSTed (default both)'),
    reason: stringOption('r', 'TEXT', 'destination pause: why'),
    limit: sharedOptions.limit('holds list: how many (default 50)'),
    json: sharedOptions.json(),
  },
  details: [
    'Examples:',
    '  commerce-sync channels list --json',
    '  commerce-sync channels add marketplace --locations 1 --buffer 5',
    '  commerce-sync channels change webshop --buffer-percent 10 --buffer 2 --cap-max-online no',
    '  commerce-sync channels override set marketplace TEA-1 fixed --quantity 10;  override set webshop MUG-2 exclude',
    '  commerce-sync channels holds add webshop 1001 --line TEA-1=2;  holds cancel webshop 1001;  holds list --state all',
    '  commerce-sync channels destination set webshop --url https://shop.example/stock;  destination show webshop',
    '  commerce-sync channels destination pause webshop --reason "maintenance";  destination resume webshop',
    '  commerce-sync channels orders show webshop W-1001 --json;  orders cancel webshop W-1001',
    'orders show: the channel order as the service has it (fulfilments with tracking, returns), its hold, the operations',
    'that touched it and the events told, each with the POST that carried it. orders cancel: voids the order at the',
    'service if it was imported (once, however often asked; refused, exit 1, once any of it shipped), or cancels its hold.',
    'A change of rules recomputes the channel at once (1000 variants a transaction). Exit status: 0 done, 1 refused',
    '(nothing to cancel, no such channel order, an order shipped, the last channel, a name taken), 2 bad input (the',
    'message names the value). docs/channels.md.',
  ].join('\n'),
  async run(ctx) {
    const database = await openDatabase(ctx.config, ctx.log);
    try {
      const code = await refusing(ctx, () => runChannels(ctx, database.db, database.url));
      // A change made here is in the audit trail like one made in the console (list and show change nothing).
      const [verb, sub] = ctx.positionals;
      const reads = verb === 'list' || verb === 'show' || sub === 'list' || sub === 'show';
      if (code === 0 && verb && !reads && !OPERATIONS.includes(verb) && !OPERATIONS.includes(`${verb} ${sub}`))
        await auditCommand(database.db, {
          action: `cli channels ${verb}${sub && ['override', 'holds', 'destination', 'orders'].includes(verb) ? ` ${sub}` : ''}`,
          target: ctx.positionals.slice(1).join(' ') || null,
          after: ctx.values,
        });
      return code;
    } finally {
      await database.close();
    }
  },
};
