// The go-plugin transport as the upper layers see it: serve a set of net/rpc services to the host,
// log hclog-style on stderr, tell the time (a clock tests can drive). Nothing here knows what the services mean.

export type { Clock } from './clock.ts';
export { systemClock } from './clock.ts';
export type { LogFields, Logger, LoggerOptions, LogLevel } from './hclog.ts';
export { createLogger, LoggerConfigError, parseLogLevel, silentLogger } from './hclog.ts';
export type { RpcHandler, RpcReply, RpcService, RpcServices } from './netrpc.ts';
export { emptyStructReply, emptyStructSchema, RpcServerError } from './netrpc.ts';
export type { PluginSet, ServePluginOptions } from './server.ts';
export { PluginStartError, servePlugin } from './server.ts';
