// quoteLiteral dollar-quotes text for statements sent without parameters (the receiver's batch). PostgreSQL
// ends the constant at the first `$tag$` after the opening one, so the text must not hold the tag anywhere, nor
// end in a part of it that the closing tag completes (`...$cs` + `$cs$` reads as `...` then `$cs$` early).
import t from 'tap';
import { sql } from 'kysely';
import { quoteLiteral } from '../../src/db/index.ts';
import { testDatabase } from '../support/db.ts';

t.test('quoteLiteral round-trips any text through PostgreSQL', async (t) => {
  const { db } = await testDatabase(t);
  const texts = [
    '',
    'plain',
    "it's",
    '$',
    '$$',
    'ends in a dollar$',
    'ends in its own tag$cs',
    '$cs',
    'ends in $c',
    'has $cs$ inside',
    'has $cs$ inside and ends in $cs',
    '$cs$',
    '$cs$$cs',
    '{"json": "$cs"}',
    'a\\b\nc',
  ];
  for (const text of texts) {
    const quoted = quoteLiteral(text);
    const got = await sql<{ v: string }>`SELECT ${sql.raw(quoted)}::text AS v`.execute(db).then(
      (r) => r.rows[0]!.v,
      (err: Error) => `error: ${err.message}`,
    );
    t.equal(got, text, `${JSON.stringify(text)} as ${quoted}`);
  }
});
