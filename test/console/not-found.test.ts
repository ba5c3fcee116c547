// What the console answers where it has nothing: an address no route knows gets a console page with a way back
// (a JSON problem under /api), and the icon a browser asks every page for is there.
import t from 'tap';
import { consoleServer } from './harness.ts';

const TOKEN = 'op-token-for-the-not-found-tests';

for (const mode of ['open demo', 'token'] as const) {
  t.test(`${mode}: an unknown address gets a console page, /api a JSON problem, /favicon.ico the icon`, async (t) => {
    const { base } = await consoleServer(t, mode === 'token' ? { token: TOKEN } : { demo: true });
    const html = { accept: 'text/html,application/xhtml+xml' };

    const page = await fetch(`${base}/no-such-page`, { headers: html });
    t.equal(page.status, 404);
    t.match(page.headers.get('content-type'), /^text\/html/);
    t.match(page.headers.get('content-security-policy'), /default-src 'self'/, 'with the console pages’ headers');
    const body = await page.text();
    t.match(body, /<h1>Not found<\/h1>/);
    t.match(body, /The console has no page at this address\./);
    t.match(body, /<a href="\/" id="back">Back to the overview<\/a>/, 'a way back');
    t.match(body, /<link rel="stylesheet" href="\/assets\/console.css">/, 'styled as the console');
    t.notMatch(body, /no-such-page/, 'the address is not echoed into the page');
    if (mode === 'open demo') t.match(body, /Demo mode:/, 'with the banner the other pages show');

    const api = await fetch(`${base}/api/no-such-thing`, { headers: html });
    t.equal(api.status, 404);
    t.match(api.headers.get('content-type'), /^application\/json/);
    t.same(await api.json(), { error: 'no route for GET /api/no-such-thing' });
    const json = await fetch(`${base}/no-such-page`, { headers: { accept: 'application/json' } });
    t.equal(json.status, 404);
    t.match(await json.json(), { error: /no route/ }, 'a client that takes no HTML gets JSON');

    // A record that is not there keeps its own sentence, and gets the way back too.
    const order = await (await fetch(`${base}/orders/nowhere/1`, { headers: { ...html, authorization: `Bearer ${TOKEN}` } })).text();
    t.match(order, /No connection of that name\.|No such order on that connection\./);
    t.match(order, /id="back"/);

    const icon = await fetch(`${base}/favicon.ico`);
    t.equal(icon.status, 200, 'no credentials needed');
    t.equal(icon.headers.get('content-type'), 'image/svg+xml');
    t.match(await icon.text(), /^<svg xmlns="http:\/\/www.w3.org\/2000\/svg"/);
    t.match(body, /<link rel="icon" href="\/favicon.ico" type="image\/svg\+xml">/, 'every page links it');
    const login = await (await fetch(`${base}/login`)).text();
    t.match(login, /<link rel="icon" href="\/favicon.ico"/, 'the login page too');
  });
}
