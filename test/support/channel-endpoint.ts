// A channel's endpoint, as tests and benchmarks stand one up: every POST is verified with the `standardwebhooks`
// package (the field's own library, not our signer checking itself). A verified POST is handed to `onPost` and
// answered 200, or with the status `onPost` returns (an endpoint that is down); one that does not verify is answered
// 400 and its reason kept in `refused`.
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { Webhook } from 'standardwebhooks';

export interface VerifiedPost {
  payload: any;
  headers: IncomingHttpHeaders;
  /** The request path without its leading slash (benchmarks give each channel its own). */
  path: string;
  /** When it arrived, epoch ms. */
  arrived: number;
}

export interface ChannelEndpoint {
  server: Server;
  refused: string[];
}

/** `secret`: the `whsec_` secret, or the secret of each path. */
export function channelEndpoint(
  secret: string | ((path: string) => string),
  // biome-ignore lint/suspicious/noConfusingVoidType: most endpoints answer 200 and return nothing
  onPost: (post: VerifiedPost) => number | void,
): ChannelEndpoint {
  const refused: string[] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (d) => {
      body += d;
    });
    req.on('end', () => {
      const path = (req.url ?? '').slice(1);
      let post: VerifiedPost;
      try {
        const payload = new Webhook(typeof secret === 'string' ? secret : secret(path)).verify(body, req.headers as Record<string, string>);
        post = { payload, headers: req.headers, path, arrived: Date.now() };
      } catch (err) {
        refused.push((err as Error).message);
        res.statusCode = 400;
        return res.end();
      }
      const status = onPost(post);
      res.statusCode = status ?? 200;
      res.end(status ? '' : 'ok');
    });
  });
  return { server, refused };
}
