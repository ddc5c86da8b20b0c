// A Git server on loopback for Argo CD's repo-server: Git's own smart HTTP server (`git http-backend`, a CGI
// program) behind a small Node HTTP server, serving the bare repositories under --root read-only
// (http://127.0.0.1:<port>/<repo>.git). Tests and the demo push to those repositories by path.
// Run: node test/sandbox/git-server.ts --root=DIR --port=N

import { spawn } from 'node:child_process';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';

function flag(name: string): string {
  const prefix = `--${name}=`;
  const value = process.argv.find((a) => a.startsWith(prefix))?.slice(prefix.length);
  if (!value) throw new Error(`git-server: missing ${prefix}...`);
  return value;
}

const root = flag('root');
const port = Number(flag('port'));

/** Splits the CGI answer into its header block and the body that follows the blank line. */
function headerEnd(buffer: Buffer): { at: number; length: number } | undefined {
  const crlf = buffer.indexOf('\r\n\r\n');
  if (crlf >= 0) return { at: crlf, length: 4 };
  const lf = buffer.indexOf('\n\n');
  return lf >= 0 ? { at: lf, length: 2 } : undefined;
}

function serve(req: IncomingMessage, res: ServerResponse): void {
  const url = new URL(req.url ?? '/', 'http://127.0.0.1');
  if (url.pathname === '/health') {
    res.end('ok');
    return;
  }
  // Read-only: pushes go to the bare repositories by path, never over HTTP.
  if (url.pathname.endsWith('/git-receive-pack') || url.searchParams.get('service') === 'git-receive-pack') {
    res.writeHead(403).end('read-only\n');
    return;
  }
  const cgi = spawn('git', ['http-backend'], {
    env: {
      PATH: process.env.PATH,
      GIT_PROJECT_ROOT: root,
      GIT_HTTP_EXPORT_ALL: '1',
      REQUEST_METHOD: req.method ?? 'GET',
      PATH_INFO: decodeURIComponent(url.pathname),
      QUERY_STRING: url.search.slice(1),
      CONTENT_TYPE: req.headers['content-type'] ?? '',
      CONTENT_LENGTH: req.headers['content-length'] ?? '',
      HTTP_CONTENT_ENCODING: req.headers['content-encoding'] ?? '',
      GIT_PROTOCOL: String(req.headers['git-protocol'] ?? ''),
      REMOTE_ADDR: req.socket.remoteAddress ?? '',
    },
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  req.pipe(cgi.stdin);
  let head: Buffer | undefined = Buffer.alloc(0);
  cgi.stdout.on('data', (chunk: Buffer) => {
    if (head === undefined) {
      res.write(chunk);
      return;
    }
    head = Buffer.concat([head, chunk]);
    const end = headerEnd(head);
    if (!end) return;
    let status = 200;
    for (const line of head.subarray(0, end.at).toString('latin1').split(/\r?\n/)) {
      const colon = line.indexOf(':');
      const name = line.slice(0, colon).trim();
      const value = line.slice(colon + 1).trim();
      if (name.toLowerCase() === 'status') status = Number.parseInt(value, 10);
      else if (name) res.setHeader(name, value);
    }
    res.writeHead(status);
    res.write(head.subarray(end.at + end.length));
    head = undefined;
  });
  cgi.stdout.on('end', () => res.end());
  cgi.on('error', (error) => {
    if (!res.headersSent) res.writeHead(500);
    res.end(String(error));
  });
}

createServer(serve).listen(port, '127.0.0.1', () => {
  process.stdout.write(`git-server: serving ${root} on http://127.0.0.1:${port}\n`);
});
