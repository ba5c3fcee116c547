// The layering lint (lint/layers.ts, run by `npm run lint`): the tree passes it, and a tree with an import up the
// layers, a feature importing another's routes or command, or a circle (type-only too) fails it, naming each.
import { spawnSync } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import t from 'tap';
import type { Teardown } from '../support/teardown.ts';

const lint = (...args: string[]) => {
  const r = spawnSync(process.execPath, ['lint/layers.ts', ...args], { encoding: 'utf8' });
  return { code: r.status, out: `${r.stdout}${r.stderr}` };
};

async function tree(t: Teardown, files: Record<string, string>): Promise<string> {
  const root = await mkdtemp(join(tmpdir(), 'cs-layers-'));
  t.teardown(() => rm(root, { recursive: true, force: true }));
  for (const [path, text] of Object.entries(files)) {
    await mkdir(dirname(join(root, path)), { recursive: true });
    await writeFile(join(root, path), text);
  }
  return root;
}

t.test("the project's own tree keeps its layers", async (t) => {
  const r = lint('--counts');
  t.equal(r.code, 0, r.out);
  t.match(r.out, /\d+ imports, 0 against the layers, 0 circles/);
});

t.test("an import up the layers, into another feature's routes or command, or round a circle fails the lint", async (t) => {
  const root = await tree(t, {
    'src/queue/handler.ts': 'export type Handler = { name: string };\n',
    'src/worker/registry.ts': "import type { Handler } from '../queue/handler.ts';\nexport const handlers: Handler[] = [];\n",
    // Up: a feature takes a type from the worker role's folder.
    'src/sync/drain.ts': "import type { Handler } from '../worker/registry.ts';\nexport const h: Handler | null = null;\n",
    // Sideways through a route file: not allowed.
    'src/channels/routes.ts': 'export const mount = () => 1;\n',
    'src/push/orders.ts': "import { mount } from '../channels/routes.ts';\nexport const m = mount;\n",
    // A circle of type-only imports in the ground.
    'src/api/a.ts': "import type { B } from './b.ts';\nexport type A = { b?: B };\n",
    'src/api/b.ts': "import type { A } from './a.ts';\nexport type B = { a?: A };\n",
  });
  const r = lint('--root', root);
  t.equal(r.code, 1, 'exit 1');
  t.match(r.out, 'src/sync/drain.ts -> src/worker/registry.ts: imports up: features -> entry points and the console');
  t.match(r.out, "src/push/orders.ts -> src/channels/routes.ts: a feature imports another feature's routes.ts");
  t.match(r.out, /circle: src\/api\/(a|b)\.ts -> src\/api\/(b|a)\.ts/);
  t.notMatch(r.out, 'src/worker/registry.ts -> src/queue/handler.ts', 'a downward import is fine');
});
