// The demo's channel page (pages/demo-channel.ts): its POSTs while this process runs the demo with its own endpoint.
import type Router from '@koa/router';
import { documented } from '../../openapi/registry.ts';
import { demoChannelPage } from '../pages/demo-channel.ts';
import { page, pageContext, type ConsoleDeps } from '../web.ts';

export function demoChannelRoutes(r: Router, deps: ConsoleDeps): void {
  documented(r).page.get('/demo-channel', { role: 'viewer' }, (ctx) => {
    const demo = deps.demo();
    const channel = demo ? demo.channel : null;
    page(ctx, demoChannelPage(pageContext(deps, ctx), channel ? { url: channel.url, posts: channel.posts() } : null));
  });
}
