// The plugin side of hashicorp/go-plugin (v1.8.0, net/rpc protocol): magic-cookie and protocol-version
// checks, the listener, the single stdout handshake line, then one yamux session whose first three
// streams are control (Control/Dispenser services), stdout and stderr, and whose later streams are
// MuxBroker connections (4-byte little-endian id, echoed, then the dispensed "Plugin" service).
// The process exits on Control.Quit, when the host closes the connection, and on any protocol or gob
// corruption: the host respawns a dead plugin, but a wedged one would fail every call until restarted.

import { randomInt } from 'node:crypto';
import { unlinkSync, writeSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Duplex } from 'node:stream';
import { CodedError } from './failure-codes.ts';
import type { GobIgnoredFields } from './gob/index.ts';
import type { Logger } from './hclog.ts';
import { createLogger } from './hclog.ts';
import {
  emptyStructReply,
  NetRpcServer,
  RpcServerError,
  type RpcService,
  type RpcServices,
} from './netrpc.ts';
import { type SessionCloseReason, YamuxSession, type YamuxStream } from './yamux.ts';

/** go-plugin's CoreProtocolVersion. */
export const CORE_PROTOCOL_VERSION = 1;
const BROKER_ID_SIZE = 4;
const MAX_UNIX_PATH = 107;

/** The services a host can dispense, by dispense name; each is served as net/rpc service "Plugin". */
export type PluginSet = Readonly<Record<string, RpcService>>;

export interface ServePluginOptions {
  /** Environment variable holding the magic cookie, e.g. ARGO_ROLLOUTS_RPC_PLUGIN. */
  readonly cookieKey: string;
  /** Accepted cookie values, each with the plugins served in that role. */
  readonly roles: Readonly<Record<string, PluginSet>>;
  readonly logger?: Logger;
  /** go-plugin application protocol version; must be listed in PLUGIN_PROTOCOL_VERSIONS. Default 1. */
  readonly appProtocolVersion?: number;
  /** unix (default, like go-plugin on Linux) or tcp on 127.0.0.1 within PLUGIN_MIN_PORT..PLUGIN_MAX_PORT. */
  readonly network?: 'unix' | 'tcp';
  /**
   * Request fields the dispensed plugins never read (e.g. a Rollout's pod spec): their gob is walked and
   * checked but not built, which is most of a big Plugin.Run's decode cost. Never applied to the control stream.
   */
  readonly ignoredFields?: GobIgnoredFields;
  /** Extra sentence for the "not launched by the host" message. */
  readonly notLaunchedHint?: string;
  /** Exit if the host has not connected within this time. Default 120 s. */
  readonly connectTimeoutMs?: number;
  /** For tests: environment and exit function. */
  readonly env?: Readonly<Record<string, string | undefined>>;
  readonly exit?: (code: number) => void;
}

/** Bad environment or listener setup: reported on stderr, exit code 1. */
export class PluginStartError extends CodedError {
  constructor(message: string) {
    super('PluginStartFailed', message);
    this.name = 'PluginStartError';
  }
}

export interface ConnectionOptions {
  readonly plugins: PluginSet;
  readonly logger: Logger;
  /** See ServePluginOptions.ignoredFields. */
  readonly ignoredFields?: GobIgnoredFields;
  /** Called once when the connection is over; code 0 = orderly (Quit, host hung up), 1 = failure. */
  readonly onDone: (code: number, reason: string) => void;
}

export interface PluginConnection {
  readonly session: YamuxSession;
  /** Ends the connection as if it failed (sends GoAway(internal error)). */
  abort(error: Error): void;
}

/** Serves one go-plugin client connection (exposed for in-memory tests; servePlugin uses it). */
export function servePluginConnection(socket: Duplex, options: ConnectionOptions): PluginConnection {
  const { logger, plugins } = options;
  let done = false;
  const finish = (code: number, reason: string): void => {
    if (done) return;
    done = true;
    if (!session.closed) session.close();
    options.onDone(code, reason);
  };
  /** Ends the connection for a failure on our side or in a stream's content: GoAway(internal error). */
  const failConnection = (error: Error, reason: string): void => {
    if (done) return;
    done = true;
    session.abort(error);
    options.onDone(1, reason);
  };

  let acceptedStreams = 0;
  let nextBrokerId = 0;
  const dispensed = new Map<number, string>();

  const controlServices: RpcServices = {
    Control: {
      Ping: async () => emptyStructReply,
      // The exit happens in onReplySent, once the reply is on the wire.
      Quit: async () => emptyStructReply,
    },
    Dispenser: {
      Dispense: async (body) => {
        if (typeof body !== 'string')
          throw new RpcServerError('Dispense expects the plugin name as a string');
        if (!Object.hasOwn(plugins, body)) throw new RpcServerError(`unknown plugin type: ${body}`);
        // Like go-plugin's MuxBroker.NextId: uint32, starting at 1.
        nextBrokerId = (nextBrokerId + 1) >>> 0;
        const id = nextBrokerId;
        dispensed.set(id, body);
        logger.debug('dispensed plugin', { plugin: body, broker_id: id });
        return { schema: { kind: 'uint' }, value: id };
      },
    },
  };

  const fatal = (where: string) => (error: Error) => {
    failConnection(error, `protocol error on ${where}: ${error.message}`);
  };

  const onStream = (stream: YamuxStream): void => {
    acceptedStreams++;
    if (acceptedStreams === 1) {
      new NetRpcServer(stream, {
        services: controlServices,
        logger,
        onFatal: fatal('control stream'),
        onReplySent: (method) => {
          if (method === 'Control.Quit') finish(0, 'host asked the plugin to quit');
        },
      });
    } else if (acceptedStreams <= 3) {
      // go-plugin's stdout/stderr streams: the host only reads them and discards what it reads.
      stream.setReceiver({ data: () => {}, end: () => {}, reset: () => {} });
    } else {
      serveBrokerStream(stream);
    }
  };

  const serveBrokerStream = (stream: YamuxStream): void => {
    let prefix = new Uint8Array(0);
    let forward: { data(chunk: Uint8Array): void; end(): void; reset(): void } | undefined;
    stream.setReceiver({
      data: (chunk) => {
        if (forward !== undefined) {
          forward.data(chunk);
          return;
        }
        const joined = new Uint8Array(prefix.length + chunk.length);
        joined.set(prefix);
        joined.set(chunk, prefix.length);
        prefix = joined;
        if (prefix.length < BROKER_ID_SIZE) return;
        const id = new DataView(prefix.buffer, prefix.byteOffset, BROKER_ID_SIZE).getUint32(0, true);
        const rest = prefix.subarray(BROKER_ID_SIZE);
        const name = dispensed.get(id);
        if (name === undefined) {
          // go-plugin closes such a stream after its 5 s accept timeout; the host's Dial then fails.
          logger.warn('broker stream for an id that was never dispensed; closing it', { broker_id: id });
          stream.close();
          forward = { data: () => {}, end: () => {}, reset: () => {} };
          return;
        }
        dispensed.delete(id);
        // The ack is the id itself; it must precede every gob byte on this stream.
        stream.write(prefix.slice(0, BROKER_ID_SIZE)).catch(() => {});
        const service = plugins[name] ?? {};
        new NetRpcServer(
          {
            setReceiver: (receiver) => {
              forward = receiver;
            },
            write: (data) => stream.write(data),
            close: () => stream.close(),
          },
          {
            services: { Plugin: service },
            logger,
            onFatal: fatal(`plugin stream ${stream.id} (${name})`),
            ...(options.ignoredFields ? { ignoredFields: options.ignoredFields } : {}),
          },
        );
        // The NetRpcServer attached itself as `forward` in its constructor.
        if (rest.length > 0) (forward as { data(chunk: Uint8Array): void } | undefined)?.data(rest);
      },
      end: () => {
        if (forward !== undefined) forward.end();
        else stream.close();
      },
      reset: () => forward?.reset(),
    });
  };

  const onClose = (reason: SessionCloseReason): void => {
    switch (reason.kind) {
      case 'local':
        return;
      case 'eof':
        finish(0, 'host closed the connection');
        return;
      case 'remote-goaway':
        finish(1, `host sent GoAway with error code ${reason.code}`);
        return;
      default:
        finish(1, `yamux session failed (${reason.kind}): ${reason.error.message}`);
    }
  };

  const session = new YamuxSession(socket, { onStream, onClose, logger });
  return {
    session,
    abort: (error) => failConnection(error, error.message),
  };
}

function notLaunchedMessage(options: ServePluginOptions, value: string | undefined): string {
  const roles = Object.keys(options.roles).join(', ');
  const got = value === undefined ? 'it is not set' : `it is ${JSON.stringify(value)}`;
  const lines = [
    'This binary is a plugin: it must be launched by its host program, not run directly.',
    `The host sets ${options.cookieKey} to one of: ${roles} (${got}).`,
  ];
  if (options.notLaunchedHint !== undefined) lines.push(options.notLaunchedHint);
  return `${lines.join('\n')}\n`;
}

function checkProtocolVersions(env: ServePluginOptions['env'] & object, version: number): void {
  const offered = env.PLUGIN_PROTOCOL_VERSIONS;
  // go-plugin's server also carries on when the variable is absent; the client then checks our line.
  if (offered === undefined || offered === '') return;
  const versions = offered.split(',').map((v) => Number.parseInt(v.trim(), 10));
  if (!versions.includes(version)) {
    throw new PluginStartError(
      `the host offers plugin protocol versions ${JSON.stringify(offered)} (PLUGIN_PROTOCOL_VERSIONS) ` +
        `but this plugin speaks version ${version}`,
    );
  }
}

function listen(server: Server, target: string | { host: string; port: number }): Promise<void> {
  return new Promise((resolve, reject) => {
    const onError = (error: Error): void => reject(error);
    server.once('error', onError);
    const done = (): void => {
      server.off('error', onError);
      resolve();
    };
    if (typeof target === 'string') server.listen(target, done);
    else server.listen(target.port, target.host, done);
  });
}

function isAddressInUse(error: unknown): boolean {
  return error instanceof Error && 'code' in error && error.code === 'EADDRINUSE';
}

async function listenUnix(server: Server, dir: string): Promise<string> {
  for (let attempt = 0; attempt < 20; attempt++) {
    const path = join(dir, `plugin${randomInt(1_000_000_000, 9_999_999_999)}`);
    if (Buffer.byteLength(path) > MAX_UNIX_PATH) {
      throw new PluginStartError(`unix socket path ${path} is longer than ${MAX_UNIX_PATH} bytes`);
    }
    try {
      await listen(server, path);
      return path;
    } catch (error) {
      if (!isAddressInUse(error)) throw error;
    }
  }
  throw new PluginStartError(`could not find a free unix socket name in ${dir}`);
}

function portFromEnv(env: Readonly<Record<string, string | undefined>>, key: string): number {
  const text = env[key];
  if (text === undefined || text === '') return 0;
  const port = Number(text);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw new PluginStartError(`${key}=${JSON.stringify(text)} is not a port number`);
  }
  return port;
}

async function listenTcp(server: Server, env: Readonly<Record<string, string | undefined>>): Promise<string> {
  const min = portFromEnv(env, 'PLUGIN_MIN_PORT');
  const max = portFromEnv(env, 'PLUGIN_MAX_PORT');
  if (min > max) {
    throw new PluginStartError(
      `PLUGIN_MIN_PORT value of ${min} is greater than PLUGIN_MAX_PORT value of ${max}`,
    );
  }
  for (let port = min; port <= max; port++) {
    try {
      await listen(server, { host: '127.0.0.1', port });
      const address = server.address();
      const bound = typeof address === 'object' && address !== null ? address.port : port;
      return `127.0.0.1:${bound}`;
    } catch (error) {
      if (!isAddressInUse(error)) throw error;
    }
  }
  throw new PluginStartError(`couldn't bind plugin TCP listener in ${min}..${max}`);
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** Keeps stray writes (console.log, libraries) off stdout, where only the handshake line may appear. */
function divertStdoutToStderr(): void {
  process.stdout.write = process.stderr.write.bind(process.stderr);
}

/**
 * Runs the plugin process: checks the environment, listens, prints the handshake line, serves one host
 * connection and exits. Resolves only when running with a custom `exit` (tests).
 */
export async function servePlugin(options: ServePluginOptions): Promise<void> {
  const env = options.env ?? process.env;
  const exit = options.exit ?? ((code: number) => process.exit(code));
  const logger = options.logger ?? createLogger('plugin');
  const version = options.appProtocolVersion ?? 1;

  const cookie = env[options.cookieKey];
  const plugins =
    cookie !== undefined && Object.hasOwn(options.roles, cookie) ? options.roles[cookie] : undefined;
  if (cookie === undefined || plugins === undefined) {
    process.stderr.write(notLaunchedMessage(options, cookie));
    exit(1);
    return;
  }

  if (options.exit === undefined) divertStdoutToStderr();
  // go-plugin servers ignore SIGINT: the host stops them with Control.Quit.
  const onSigint = (): void => logger.debug('ignoring SIGINT; waiting for the host to quit the plugin');
  process.on('SIGINT', onSigint);

  const server = createServer({ allowHalfOpen: true });
  let socketPath: string | undefined;
  const removeSocket = (): void => {
    if (socketPath === undefined) return;
    try {
      unlinkSync(socketPath);
    } catch {
      // Already gone.
    }
    socketPath = undefined;
  };

  let exited = false;
  const shutdown = (code: number, reason: string): void => {
    if (exited) return;
    exited = true;
    process.off('SIGINT', onSigint);
    process.off('SIGTERM', onSigterm);
    if (code === 0) logger.info('plugin exiting', { reason });
    else logger.error('plugin exiting', { reason, exit_code: code });
    server.close();
    removeSocket();
    exit(code);
  };

  // Not go-plugin behaviour (Go dies on SIGTERM); here it removes a not yet connected socket file.
  const onSigterm = (): void => shutdown(143, 'terminated by SIGTERM');
  process.once('SIGTERM', onSigterm);

  let address: string;
  try {
    checkProtocolVersions(env, version);
    if (options.network === 'tcp') {
      address = await listenTcp(server, env);
    } else {
      socketPath = await listenUnix(server, env.PLUGIN_UNIX_SOCKET_DIR || tmpdir());
      address = socketPath;
    }
  } catch (error) {
    shutdown(1, `plugin init error: ${errorText(error)}`);
    return;
  }

  const network = options.network ?? 'unix';
  logger.debug('plugin address', { network, address });
  const connectTimer = setTimeout(
    () => shutdown(1, 'the host did not connect in time'),
    options.connectTimeoutMs ?? 120_000,
  );

  const finished = new Promise<void>((resolve) => {
    server.once('connection', (socket: Socket) => {
      clearTimeout(connectTimer);
      // One host connection per plugin process: stop listening and remove the socket file now.
      server.close();
      removeSocket();
      socket.setNoDelay(true);
      servePluginConnection(socket, {
        plugins,
        logger,
        ...(options.ignoredFields ? { ignoredFields: options.ignoredFields } : {}),
        onDone: (code, reason) => {
          shutdown(code, reason);
          resolve();
        },
      });
    });
  });

  // The first and only stdout line; go-plugin's client reads exactly this to find us.
  writeSync(1, `${CORE_PROTOCOL_VERSION}|${version}|${network}|${address}|netrpc|\n`);
  await finished;
}
