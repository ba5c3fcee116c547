// Event names. A delivered payload names its event in the plural (`fulfillments.create`), a subscription in
// the singular (`fulfillment.create`). The spec does not give the mapping, so we apply the English plural
// rule to the last word of the noun before the first dot, rather than keep a table of known strings.

import { HANDLED_RESOURCES, SUBSCRIBED_EVENTS } from '../catalog/index.ts';

// Both lists come from the catalogue: an event about any other resource is stored as `unhandled`, not enqueued.
export { HANDLED_RESOURCES, SUBSCRIBED_EVENTS };

export interface NormalisedEvent {
  /** Singular resource, e.g. `fulfillment_return`; null when the event has no `noun.action` shape. */
  resource: string | null;
  /** Everything after the first dot, e.g. `stock_level_update`. */
  action: string | null;
  /** The subscription form, e.g. `fulfillment_return.create`; null when the shape is wrong. */
  subscription: string | null;
  /** True when the workers act on it (see HANDLED_RESOURCES). */
  handled: boolean;
}

// Words whose plural does not follow the suffix rules below.
const irregular: Record<string, string> = { people: 'person', children: 'child', men: 'man', women: 'woman', data: 'datum' };

/** English plural -> singular for one lower-case word; a word already singular is left as it is. */
export function singularWord(word: string): string {
  if (irregular[word]) return irregular[word];
  if (/[^aeiou]ies$/.test(word)) return `${word.slice(0, -3)}y`; // companies -> company
  if (/(ss|sh|ch|x|z)es$/.test(word)) return word.slice(0, -2); // addresses -> address, batches -> batch
  if (/(ss|us|is)$/.test(word)) return word; // address, status, analysis: already singular
  if (/[^s]s$/.test(word)) return word.slice(0, -1); // variants -> variant
  return word;
}

/** `stock_transfers` -> `stock_transfer`: only the last word of a compound noun is plural. */
export function singularNoun(noun: string): string {
  const words = noun.split('_');
  words[words.length - 1] = singularWord(words[words.length - 1]!);
  return words.join('_');
}

const shape = /^([a-z][a-z0-9]*(?:_[a-z0-9]+)*)\.([a-z][a-z0-9_.]*)$/;

// Every delivery names one of a few dozen events: each is worked out once. (Only signed deliveries get here,
// so only the service adds names; the bound is for safety, not expected to be reached.)
const known = new Map<string, NormalisedEvent>();

/** Normalises a delivered event name (plural or singular, any case) to its resource, action and subscription. */
export function normaliseEvent(event: string): NormalisedEvent {
  let n = known.get(event);
  if (!n) {
    if (known.size >= 1000) known.clear();
    n = Object.freeze(normalise(event));
    known.set(event, n);
  }
  return n;
}

function normalise(event: string): NormalisedEvent {
  const m = shape.exec(event.trim().toLowerCase());
  if (!m) return { resource: null, action: null, subscription: null, handled: false };
  const resource = singularNoun(m[1]!);
  const action = m[2]!;
  return { resource, action, subscription: `${resource}.${action}`, handled: HANDLED_RESOURCES.has(resource) };
}
