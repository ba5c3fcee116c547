// Statements run again and again are prepared once per connection. node-postgres sends every parameterised
// query as an unnamed statement, which PostgreSQL parses, analyses and plans afresh on each call: for statements
// that execute in tens of microseconds, planning is a large part of PostgreSQL's CPU (bench/accounts
// --pg-statements shows it per statement). A named statement is parsed once on its connection, and after five runs
// PostgreSQL may keep a generic plan (when it costs no more than the custom ones: plan_cache_mode auto).
//
// Parameterised queries are named, and so are texts without parameters that are one plain statement (SELECT, WITH,
// INSERT, UPDATE, DELETE, and no semicolon): pg-boss inlines everything of its fetch into the text, so unnamed,
// every poll of every worker would be parsed and planned afresh. Any other text without parameters keeps the
// simple protocol, which also carries multi-statement texts, transaction control and SET: naming it would change
// that. A text is named on its second run on a connection, and a connection names at most MAX_NAMED texts: texts
// built per call (a VALUES list of N rows) stay unnamed once the hot ones have their names, so a backend's plan
// cache stays bounded.
import { createHash } from 'node:crypto';
import pg from 'pg';

export const MAX_NAMED = 200;
// How many distinct texts a connection counts while looking for the ones run twice.
const MAX_COUNTED = 2_000;

/** A text without parameters that may still be named: one plain statement. */
const ONE_STATEMENT = /^\s*(?:SELECT|WITH|INSERT|UPDATE|DELETE)\b[^;]*$/i;

/** A pg Client that runs its repeated parameterised (or one-statement) texts as named (prepared) statements. */
export class PreparingClient extends pg.Client {
  #names = new Map<string, string>();
  /** Texts run once on this connection, not named yet. */
  #seenOnce = new Set<string>();

  // pg's query() has many overloads; only (text, values[], callback?) changes, the rest pass through as given.
  // biome-ignore lint/suspicious/noExplicitAny: one override stands for every overload of pg's query(), whose arguments and answers differ (a promise, nothing, the submittable given)
  override query(...args: any[]): any {
    const [text, values] = args;
    // (text), (text, values) and (text, values, callback); anything else passes through.
    const params: unknown[] | null = Array.isArray(values) ? values : values === undefined ? [] : null;
    if (typeof text === 'string' && params && (params.length > 0 || ONE_STATEMENT.test(text))) {
      const name = this.#nameOf(text);
      if (name) return Reflect.apply(super.query, this, [{ name, text, values: params }, ...args.slice(2)]);
    }
    return Reflect.apply(super.query, this, args);
  }

  #nameOf(text: string): string | undefined {
    const known = this.#names.get(text);
    if (known || this.#names.size >= MAX_NAMED) return known;
    if (!this.#seenOnce.delete(text)) {
      if (this.#seenOnce.size < MAX_COUNTED) this.#seenOnce.add(text);
      return undefined;
    }
    // A name per text: two texts never share one (pg refuses that), whatever order a connection sees them in.
    const name = `cs_${createHash('sha1').update(text).digest('base64url')}`;
    this.#names.set(text, name);
    return name;
  }
}
