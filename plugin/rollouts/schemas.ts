// Gob schemas of the replies the controller decodes. Field names and kinds must match Argo Rollouts' Go types
// exactly (utils/plugin/types, rollout/steps/plugin/rpc, metricproviders/plugin/rpc).

import type { GobSchema } from '../goplugin/gob/index.ts';

const str = { kind: 'string' } as const;

export const rpcErrorSchema: GobSchema = {
  kind: 'struct',
  name: 'RpcError',
  fields: [{ name: 'ErrorString', type: str }],
};

export const rpcStepResultSchema: GobSchema = {
  kind: 'struct',
  name: 'RpcStepResult',
  fields: [
    { name: 'Phase', type: str },
    { name: 'Message', type: str },
    { name: 'RequeueAfter', type: { kind: 'int' } }, // time.Duration, nanoseconds
    { name: 'Status', type: { kind: 'bytes' } }, // json.RawMessage
  ],
};

/** rpc.Response of the step plugin package: every Run/Terminate/Abort reply. */
export const stepResponseSchema: GobSchema = {
  kind: 'struct',
  name: 'Response',
  fields: [
    { name: 'Result', type: rpcStepResultSchema },
    { name: 'Error', type: rpcErrorSchema },
  ],
};

const timeSchema: GobSchema = { kind: 'gobEncoder', name: 'Time' };

export const stringMapSchema: GobSchema = { kind: 'map', name: 'map[string]string', key: str, elem: str };

export const measurementSchema: GobSchema = {
  kind: 'struct',
  name: 'Measurement',
  fields: [
    { name: 'Phase', type: str },
    { name: 'Message', type: str },
    { name: 'StartedAt', type: timeSchema },
    { name: 'FinishedAt', type: timeSchema },
    { name: 'Value', type: str },
    { name: 'Metadata', type: stringMapSchema },
    { name: 'ResumeAt', type: timeSchema },
  ],
};

export const stringSchema: GobSchema = str;
