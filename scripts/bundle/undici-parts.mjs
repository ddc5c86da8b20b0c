// Bundled in place of undici's index (scripts/build.ts): the parts vmzones and @kubernetes/client-node call: Agent and
// ProxyAgent (with Dispatcher#request, which undici's index adds to every dispatcher) and fetch (client-node's Watch).
// The index also evaluates the mock agents, the cache stores, WebSocket, cookies and more in every process.

import api from 'undici/lib/api/index.js';
import Agent from 'undici/lib/dispatcher/agent.js';
import Dispatcher from 'undici/lib/dispatcher/dispatcher.js';
import ProxyAgent from 'undici/lib/dispatcher/proxy-agent.js';
import fetchParts from 'undici/lib/web/fetch/index.js';

Object.assign(Dispatcher.prototype, api);

export const fetch = fetchParts.fetch;
export { Agent, Dispatcher, ProxyAgent };
