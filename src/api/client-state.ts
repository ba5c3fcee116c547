// What the API clients of one runtime share (src/runtime.ts creates one; a one-shot command creates its own):
// one budget gate per connection, so every client of a connection in the runtime queues in one place and the
// runtime's requests in flight stay within API_CONCURRENCY; the key that encrypts tokens at rest; and what each
// connection's service has been seen to refuse. Two runtimes in one process (tests) share none of it: they share
// the budget only through PostgreSQL, as two processes do.
import type { Config } from '../config.ts';
import type { Db } from '../db/index.ts';
import type { Connection } from '../db/schema.ts';
import { metrics } from '../metrics.ts';
import { ApiError } from './errors.ts';
import { BudgetGate } from './gate.ts';
import { tokenKey } from './secrets.ts';
import type { ConnectionTraits } from './types.ts';

export class ClientState {
  readonly #gates = new Map<number, BudgetGate>();
  readonly #traits = new Map<number, ConnectionTraits>();
  #key: Buffer | undefined;

  /** The gate of a connection: made on first use with the settings of the client asking. */
  gate(deps: { db: Db; config: Config }, connection: Connection): BudgetGate {
    let gate = this.#gates.get(connection.id);
    if (!gate) {
      const name = connection.name;
      gate = new BudgetGate({
        db: deps.db,
        connectionId: connection.id,
        concurrency: deps.config.API_CONCURRENCY,
        settings: { reserve: deps.config.BUDGET_RESERVE, leaseMs: deps.config.API_TIMEOUT_MS + 30_000 },
        stopped: (status, reason) =>
          new ApiError(`connection ${name} is ${status}${reason ? `: ${reason}` : ''}; nothing is sent until it is reconnected`, {
            status: status === 'lapsed' ? 402 : status === 'unauthorized' ? 401 : null,
          }),
        onAvailable: (n) => metrics.budgetRemaining.set({ connection: name }, Math.max(0, n)),
      });
      this.#gates.set(connection.id, gate);
    }
    return gate;
  }

  /** The budget of a connection as this runtime's gate last wrote it, if within `maxAgeMs` (BudgetGate.seen). */
  budgetSeen(connectionId: number, maxAgeMs: number): ReturnType<BudgetGate['seen']> {
    return this.#gates.get(connectionId)?.seen(maxAgeMs) ?? null;
  }

  /** Gives back what every gate holds of its budget (answers not yet settled, slots not used): before exiting. */
  async settle(): Promise<void> {
    await Promise.all([...this.#gates.values()].map((g) => g.settle().catch(() => {})));
  }

  traits(connectionId: number): ConnectionTraits {
    let t = this.#traits.get(connectionId);
    if (!t) this.#traits.set(connectionId, (t = { singleStatusOnly: false }));
    return t;
  }

  /** The token key (TOKEN_ENCRYPTION_KEY, or the one generated under DATA_DIR), read once. */
  key(config: Config): Buffer {
    this.#key ??= tokenKey(config);
    return this.#key;
  }
}
