// `commerce-sync push`: enqueue an operation (from --file JSON and/or flags), wait for its outcome, print it.
// Also `push list`, `push show ID`, `push retry ID`. The operation runs in a worker process (`start` or `worker`).
import { auditCommand } from '../audit.ts';
import { connectionName } from '../db/connections.ts';
import { readFile } from 'node:fs/promises';
import { sharedOptions, stringOption, UsageError, type CommandContext, type CommandModule } from '../command.ts';
import { openDatabase, type Db } from '../db/index.ts';
import type { PushKind, PushOperation, PushState } from '../db/schema.ts';
import { startBoss, stopBoss } from '../queue/boss.ts';
import { createQueues } from '../queue/queues.ts';
import { InputError, isKind, kinds } from './input.ts';
import { chooseConnection, ConnectionChoiceError } from '../api/connections.ts';
import { connectionRef, enqueueOperation } from './enqueue.ts';
import { getOperation, listOperations } from '../db/operations.ts';
import { present, retryOperation, RetryRefused } from './store.ts';

const aliases: Record<string, PushKind> = {
  receive: 'receive-purchase-order',
  import: 'import-order',
  count: 'stock-count',
  fulfil: 'ship',
  fulfill: 'ship',
};
const finished = (s: PushState) => s === 'confirmed' || s === 'failed';

type Values = CommandContext['values'];
const str = (v: Values, k: string) => (typeof v[k] === 'string' ? (v[k] as string) : undefined);
const list = (v: Values, k: string) => (Array.isArray(v[k]) ? (v[k] as string[]) : []);
const int = (v: Values, k: string) => {
  const s = str(v, k);
  if (s === undefined) return undefined;
  if (!/^\d+$/.test(s)) throw new UsageError(`--${k} must be a whole number, not "${s}"`);
  return Number(s);
};

/** `SKU=QTY` or `line:ID=QTY`. */
function lineFlag(s: string) {
  const m = /^(.+)=(-?\d+(?:\.\d+)?)$/.exec(s);
  if (!m) throw new UsageError(`--line "${s}": expected SKU=QUANTITY or line:ORDER_LINE_ITEM_ID=QUANTITY`);
  const id = /^line:(\d+)$/.exec(m[1]!);
  return id ? { order_line_item_id: Number(id[1]), quantity: m[2]! } : { sku: m[1]!, quantity: m[2]! };
}

/** `SKU@LOCATION=QTY`. */
function countFlag(s: string) {
  const m = /^(.+)@(\d+)=(\d+(?:\.\d+)?)$/.exec(s);
  if (!m) throw new UsageError(`--count "${s}": expected SKU@LOCATION_ID=QUANTITY`);
  return { sku: m[1]!, location_id: Number(m[2]), quantity: m[3]! };
}

/** The input: the --file JSON (or - for stdin), with flags laid over it. */
async function readInput(kind: PushKind, v: Values): Promise<Record<string, unknown>> {
  let input: Record<string, unknown> = {};
  const file = str(v, 'file');
  if (file) {
    const text =
      file === '-'
        ? await readStdin()
        : await readFile(file, 'utf8').catch((err) => {
            throw new UsageError(`cannot read ${file}: ${err.message}`);
          });
    try {
      input = JSON.parse(text);
    } catch (err) {
      throw new UsageError(`${file} is not JSON: ${(err as Error).message}`);
    }
    if (!input || typeof input !== 'object' || Array.isArray(input)) throw new UsageError(`${file} must hold a JSON object`);
  }
  const set = (k: string, value: unknown) => {
    if (value !== undefined) input[k] = value;
  };
  set('order_id', int(v, 'order-id'));
  set('channel', str(v, 'channel'));
  set('channel_order_id', str(v, 'channel-order-id'));
  if (kind === 'receive-purchase-order') set('purchase_order_id', int(v, 'purchase-order-id'));
  if (kind === 'ship') {
    set('fulfillment_id', int(v, 'fulfillment-id'));
    if (v['pack-only']) input.fulfil = false;
    const tracking = Object.fromEntries(
      Object.entries({ company: str(v, 'tracking-company'), number: str(v, 'tracking-number'), url: str(v, 'tracking-url') }).filter(
        ([, x]) => x !== undefined,
      ),
    );
    if (Object.keys(tracking).length) input.tracking = { ...(input.tracking as object | undefined), ...tracking };
  }
  if (kind === 'ship' || kind === 'return') {
    const lines = list(v, 'line').map(lineFlag);
    if (lines.length) input.lines = lines;
  }
  if (kind === 'return') set('location_id', int(v, 'location-id'));
  if (kind === 'return' || kind === 'stock-count') set('notes', str(v, 'notes'));
  if (kind === 'stock-count') {
    const counts = list(v, 'count').map(countFlag);
    if (counts.length) input.counts = counts;
  }
  return input;
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of process.stdin) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

async function waitFor(db: Db, id: number, timeoutSeconds: number): Promise<PushOperation> {
  const until = Date.now() + timeoutSeconds * 1000;
  for (;;) {
    const op = (await getOperation(db, id))!;
    if (finished(op.state) || Date.now() >= until) return op;
    await new Promise((r) => setTimeout(r, 500));
  }
}

function row(op: PushOperation): string {
  const when = (op.finished_at ?? op.updated_at).toISOString().replace('T', ' ').slice(0, 19);
  return [
    String(op.id).padStart(6),
    op.kind.padEnd(22),
    op.state.padEnd(9),
    String(op.attempts).padStart(3),
    when,
    op.order_key.padEnd(28),
    (op.reason ?? '').slice(0, 100),
  ].join('  ');
}

export const commands: CommandModule['commands'] = {
  push: {
    summary: 'Push an operation to the service and wait for its outcome; or list, show and retry operations.',
    args: `<${kinds.join('|')}> | list | show ID | retry ID`,
    positionals: true,
    options: {
      file: stringOption('f', 'FILE', "the operation's input as JSON (- reads stdin); flags below override it"),
      connection: sharedOptions.connection('connection to push to (default: the only one)'),
      'no-wait': { type: 'boolean', short: 'W', multiple: false, description: 'print the queued operation and return at once' },
      timeout: stringOption('T', 'SECONDS', 'how long to wait for the outcome (default 300)'),
      'order-id': stringOption('o', 'ID', "the service's order id (ship, invoice, pay, void, return)"),
      channel: stringOption('C', 'NAME', 'channel name of an imported order (with --channel-order-id)'),
      'channel-order-id': stringOption('O', 'ID', "the channel's order id of an imported order"),
      line: stringOption('l', 'SKU=QTY', 'ship/return: a line and quantity (or line:ORDER_LINE_ITEM_ID=QTY); repeatable', true),
      'fulfillment-id': stringOption('F', 'ID', 'ship: fulfil this packed fulfillment instead of packing'),
      'pack-only': { type: 'boolean', short: 'p', multiple: false, description: 'ship: pack, do not mark fulfilled' },
      'tracking-company': stringOption('K', 'NAME', 'ship: carrier'),
      'tracking-number': stringOption('N', 'NUMBER', 'ship: tracking number'),
      'tracking-url': stringOption('U', 'URL', 'ship: tracking URL'),
      'location-id': stringOption('L', 'ID', 'return: location receiving the goods'),
      'purchase-order-id': stringOption('P', 'ID', 'receive-purchase-order: the purchase order (received whole)'),
      count: stringOption('q', 'SKU@LOC=QTY', 'stock-count: counted quantity of a SKU at a location; repeatable', true),
      notes: stringOption('m', 'TEXT', 'return / stock-count: notes'),
      state: stringOption('s', 'STATE', 'list: only queued, sent, confirmed or failed'),
      kind: stringOption('k', 'KIND', 'list: only this operation'),
      limit: sharedOptions.limit('list: how many (default 50)'),
      json: sharedOptions.json('list: print JSON'),
    },
    details: [
      'Examples:',
      '  commerce-sync push import-order --file order.json',
      '  commerce-sync push ship --channel shop --channel-order-id 1001 --tracking-company DHL --tracking-number 123',
      '  commerce-sync push ship --order-id 42 --line SKU-1=2 --pack-only',
      '  commerce-sync push pay --order-id 42',
      '  commerce-sync push receive --purchase-order-id 7',
      '  commerce-sync push stock-count --count SKU-000001@1=10 --count SKU-000002@1=0',
      '  commerce-sync push list --state failed;  push show 12;  push retry 12',
      'Exit status: 0 confirmed, 1 failed, 3 still queued or sent when --timeout ran out. Input formats: docs/push.md.',
    ].join('\n'),
    async run(ctx) {
      const [verb, arg, ...extra] = ctx.positionals;
      if (!verb) throw new UsageError('say which operation (or list, show ID, retry ID)');
      if (extra.length) throw new UsageError(`unexpected arguments: ${extra.join(' ')}`);
      const kind = aliases[verb] ?? verb;
      const isAdmin = verb === 'list' || verb === 'show' || verb === 'retry';
      if (!isAdmin && !isKind(kind)) throw new UsageError(`unknown operation "${verb}": one of ${kinds.join(', ')}, or list, show, retry`);
      if ((verb === 'show' || verb === 'retry') && !/^\d+$/.test(arg ?? '')) throw new UsageError(`push ${verb} needs an operation id`);
      if (!isAdmin && arg) throw new UsageError(`unexpected argument "${arg}"`);
      const timeout = int(ctx.values, 'timeout') ?? 300;
      const input = isKind(kind) ? await readInput(kind, ctx.values) : {};

      const database = await openDatabase(ctx.config, ctx.log, { poolSize: 3 });
      try {
        const { db } = database;
        if (verb === 'list') {
          const state = str(ctx.values, 'state') as PushState | undefined;
          const k = str(ctx.values, 'kind');
          if (k && !isKind(k)) throw new UsageError(`--kind must be one of ${kinds.join(', ')}`);
          const conn = str(ctx.values, 'connection') ? await chooseConnection(db, connectionRef(str(ctx.values, 'connection'))) : undefined;
          const ops = await listOperations(db, {
            state,
            kind: k as PushKind | undefined,
            connectionId: conn?.id,
            limit: int(ctx.values, 'limit'),
          });
          if (ctx.values.json)
            ctx.out(
              JSON.stringify(
                ops.map((o) => present(o)),
                null,
                2,
              ),
            );
          else {
            ctx.out(
              ['    id', 'operation'.padEnd(22), 'state'.padEnd(9), 'try', 'updated'.padEnd(19), 'order key'.padEnd(28), 'reason'].join(
                '  ',
              ),
            );
            for (const op of ops) ctx.out(row(op));
          }
          return 0;
        }
        if (verb === 'show') {
          const op = await getOperation(db, Number(arg));
          if (!op) {
            ctx.out(`no operation ${arg}`);
            return 1;
          }
          ctx.out(JSON.stringify(present(op, true), null, 2));
          return 0;
        }
        const boss = await startBoss(database.url, ctx.log, { supervise: false, schedule: false, max: 2 });
        try {
          await createQueues(boss);
          let op: PushOperation;
          try {
            op =
              verb === 'retry'
                ? await retryOperation(db, boss, Number(arg))
                : await enqueueOperation({ db, boss }, kind as PushKind, input, str(ctx.values, 'connection'));
          } catch (err) {
            if (err instanceof InputError) throw new UsageError(`invalid ${kind} input:\n  ${err.problems.join('\n  ')}`);
            if (err instanceof ConnectionChoiceError || err instanceof RetryRefused) {
              process.stderr.write(`commerce-sync push: ${err.message}\n`);
              return 1;
            }
            throw err;
          }
          await auditCommand(db, {
            action: `cli push ${verb}`,
            connection: { id: op.connection_id, name: await connectionName(db, op.connection_id) },
            target: `operation ${op.id}`,
            after: { operation: present(op) },
          });
          if (!ctx.values['no-wait']) op = await waitFor(db, op.id, timeout);
          ctx.out(JSON.stringify(present(op), null, 2));
          if (op.state === 'failed') return 1;
          if (!ctx.values['no-wait'] && !finished(op.state)) {
            process.stderr.write(
              `operation ${op.id} is still ${op.state} after ${timeout} s: is a worker running (\`commerce-sync start\`)? ` +
                `Follow it with \`commerce-sync push show ${op.id}\`.\n`,
            );
            return 3;
          }
          return 0;
        } finally {
          await stopBoss(boss);
        }
      } finally {
        await database.close();
      }
    },
  },
};
