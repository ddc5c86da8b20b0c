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
