// commerce-sync tokens list | create NAME --role ROLE [--expires-in-days N] | revoke ID: personal API tokens, at
// this machine's shell (an administrator: it holds the database); with --url URL, through that console's API with
// OPERATOR_API_TOKEN instead (the token's role decides, as for any API request).
import { auditCommand, cliActor } from '../audit.ts';
import { formatTable, sharedOptions, UsageError, type CommandContext, type CommandModule } from '../command.ts';
import { withDatabase } from '../db/index.ts';
import { listTokens, revokeToken, tokenById } from '../db/people.ts';
import { idOf } from '../inputs.ts';
import { createToken, presentToken, TokenRefused } from './tokens.ts';

const VERBS = 'list | create NAME --role viewer|operator|admin [--expires-in-days N] | revoke ID';

/** What /api/tokens answers: the list, or the token just made (its secret shown once). */
interface TokensAnswer {
  tokens: ReturnType<typeof presentToken>[];
  token: string;
  id: number;
  person: string;
  role: string;
}

/** A JSON answer of a console's API, as the caller expects it (nothing checks it): `error` when refused. */
export type ApiAnswer<T> = T & { error?: string };

/** A request to a console's JSON API with OPERATOR_API_TOKEN: its status and JSON answer. */
export async function callApi<T extends object>(
  ctx: CommandContext,
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; body: ApiAnswer<T> }> {
  const base = String(ctx.values.url).replace(/\/+$/, '');
  if (!ctx.config.OPERATOR_API_TOKEN)
    throw new UsageError('--url needs OPERATOR_API_TOKEN: a personal token (commerce-sync tokens create)');
  const res = await fetch(`${base}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${ctx.config.OPERATOR_API_TOKEN}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json().catch(() => ({}))) as ApiAnswer<T> };
}

function print(ctx: CommandContext, tokens: ReturnType<typeof presentToken>[]): void {
  if (ctx.values.json) {
    ctx.out(JSON.stringify(tokens, null, 2));
    return;
  }
  if (!tokens.length) {
    ctx.out('no tokens');
    return;
  }
  const when = (d: unknown) => (d ? new Date(d as string).toISOString().slice(0, 16).replace('T', ' ') : '-');
  for (const line of formatTable([
    ['ID', 'NAME', 'PERSON', 'ROLE', 'EXPIRES', 'REVOKED', 'LAST USED'],
    ...tokens.map((t) => [String(t.id), t.name, t.person, t.role, when(t.expires_at), when(t.revoked_at), when(t.last_used_at)]),
  ]))
    ctx.out(line);
}

async function tokens(ctx: CommandContext): Promise<number> {
  const [verb, arg, ...extra] = ctx.positionals;
  if (extra.length) throw new UsageError(`unexpected argument ${extra[0]}`);
  const input = {
    name: arg,
    role: ctx.values.role,
    expires_in_days: ctx.values['expires-in-days'] === undefined ? undefined : Number(ctx.values['expires-in-days']),
  };
  if (verb !== 'list' && verb !== 'create' && verb !== 'revoke') throw new UsageError(`say what to do: ${VERBS}`);
  if (verb === 'revoke' && idOf(arg) === undefined) throw new UsageError('revoke needs a token id (commerce-sync tokens list)');
  if (typeof ctx.values.url === 'string') {
    const r =
      verb === 'list'
        ? await callApi<TokensAnswer>(ctx, 'GET', '/api/tokens')
        : verb === 'create'
          ? await callApi<TokensAnswer>(ctx, 'POST', '/api/tokens', input)
          : await callApi<TokensAnswer>(ctx, 'DELETE', `/api/tokens/${arg}`);
    if (r.status >= 400) {
      process.stderr.write(`commerce-sync tokens: ${r.status} ${r.body.error ?? ''}\n`);
      return r.status === 400 ? 2 : 1;
    }
    if (verb === 'list') print(ctx, r.body.tokens);
    else
      ctx.out(
        verb === 'create'
          ? `${r.body.token}\n(shown once: keep it now) token ${r.body.id} for ${r.body.person}, ${r.body.role}`
          : `revoked token ${arg}`,
      );
    return 0;
  }
  return withDatabase(ctx, async ({ db }) => {
    if (verb === 'list') {
      print(ctx, (await listTokens(db)).map(presentToken));
      return 0;
    }
    if (verb === 'create') {
      let made: Awaited<ReturnType<typeof createToken>>;
      try {
        made = await createToken(db, cliActor(), input);
      } catch (err) {
        if (err instanceof TokenRefused) throw new UsageError(err.message);
        throw err;
      }
      await auditCommand(db, { action: 'cli tokens create', target: `token ${made.row.id}`, after: presentToken(made.row) });
      ctx.out(`${made.token}\n(shown once: keep it now) token ${made.row.id} for ${made.row.person}, ${made.row.role}`);
      return 0;
    }
    const id = idOf(arg)!;
    const before = await tokenById(db, id);
    if (!before || !(await revokeToken(db, id))) {
      process.stderr.write(`commerce-sync tokens: no live token ${id}\n`);
      return 1;
    }
    await auditCommand(db, { action: 'cli tokens revoke', target: `token ${id}`, before: presentToken(before) });
    ctx.out(`revoked token ${id}`);
    return 0;
  });
}

export const commands: CommandModule['commands'] = {
  tokens: {
    summary: 'Personal API tokens for scripts and the CLI: list, create (shown once), revoke.',
    args: VERBS,
    positionals: true,
    options: {
      role: { type: 'string', value: 'ROLE', description: 'create: viewer, operator or admin' },
      'expires-in-days': { type: 'string', value: 'N', description: 'create: days the token lasts (default 90)' },
      url: { type: 'string', value: 'URL', description: "through this console's API with OPERATOR_API_TOKEN, instead of the database" },
      json: sharedOptions.json(),
    },
    run: tokens,
  },
};
