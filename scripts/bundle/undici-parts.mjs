// Bundled in place of undici's index (scripts/build.ts): the parts vmzones and @kubernetes/client-node's KubeConfig
// call: Agent and ProxyAgent, with Dispatcher#request, which undici's index adds to every dispatcher (fetch, for
// client-node's Watch, is undici-fetch.mjs). The index also evaluates the mock agents, the cache stores, WebSocket,
// cookies and more in every process.

import api from 'undici/lib/api/index.js';
import Agent from 'undici/lib/dispatcher/agent.js';
import Dispatcher from 'undici/lib/dispatcher/dispatcher.js';
import ProxyAgent from 'undici/lib/dispatcher/proxy-agent.js';

Object.assign(Dispatcher.prototype, api);

export { Agent, Dispatcher, ProxyAgent };
