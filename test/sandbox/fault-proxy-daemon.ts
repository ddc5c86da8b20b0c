// The sandbox's fault proxy as a daemon (started by `up` with the faultProxy option; docs/testing.md):
// node test/sandbox/fault-proxy-daemon.ts --upstream https://127.0.0.1:<api> --pki <dir> --port N --control-port M

import { parseArgs } from 'node:util';
import { startFaultProxy } from './fault-proxy.ts';

const { values } = parseArgs({
  options: {
    upstream: { type: 'string' },
    pki: { type: 'string' },
    port: { type: 'string' },
    'control-port': { type: 'string' },
  },
});
if (!values.upstream || !values.pki || !values.port || !values['control-port']) {
  process.stderr.write('usage: fault-proxy-daemon.ts --upstream URL --pki DIR --port N --control-port M\n');
  process.exit(2);
}
// One connection's failure must not end the proxy (every plugin request of the sandbox goes through it): it is
// logged with its stack, for the test that sees its effect, and the proxy goes on.
process.on('uncaughtException', (error) => {
  process.stderr.write(`fault proxy: uncaught ${error.stack ?? String(error)}\n`);
});
process.on('unhandledRejection', (reason) => {
  process.stderr.write(
    `fault proxy: unhandled rejection ${reason instanceof Error ? (reason.stack ?? reason.message) : String(reason)}\n`,
  );
});
const proxy = await startFaultProxy({
  upstream: values.upstream,
  pkiDir: values.pki,
  port: Number(values.port),
  controlPort: Number(values['control-port']),
});
process.stderr.write(`fault proxy ${proxy.url} -> ${values.upstream}, control ${proxy.controlUrl}\n`);
const stop = () => void proxy.close().then(() => process.exit(0));
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
