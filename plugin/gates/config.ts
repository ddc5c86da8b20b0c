// The metric config of a vmzones/gates metric: `provider.plugin["vmzones/gates"]`, after the controller has
// substituted `{{args.*}}`. Args arrive as strings, so numbers and booleans are also accepted as their text.
// Everything is validated before anything is read; a problem names the field.

import { z } from 'zod';
import { CodedError } from '../goplugin/failure-codes.ts';
import { GoDurationError, parseGoDurationMs } from '../kube/go-duration.ts';
import {
  dns1123Label,
  dnsLabelSchema,
  hostNameSchema,
  namespaceNameSchema,
  objectNameSchema,
} from '../kube/names.ts';
import { gatesPluginName } from '../rollouts/plugin-names.ts';
import { maxScrapeBytesCap } from '../vm/scrape-budget.ts';
import { type ZoneKind, type ZoneKindField, zoneKindFields, zoneKinds } from '../vm/zone-kinds.ts';
import { clusterNameSchema } from '../zones/spec.ts';

export const gateNames = ['vmclusterReady', 'vmagentQueueDrained', 'vmauthReloaded', 'zoneAnswers'] as const;
export type GateName = (typeof gateNames)[number];

export class GateConfigError extends CodedError {
  readonly problems: readonly string[];
  constructor(problems: readonly string[]) {
    super('GateConfigInvalid', `invalid ${gatesPluginName} config: ${problems.join('; ')}`);
    this.name = 'GateConfigError';
    this.problems = problems;
  }
}

/** Milliseconds from a Go duration string ("30s", "15m", "1h30m"). */
const durationMs = z.string().transform((value, ctx) => {
  try {
    const ms = parseGoDurationMs(value);
    if (ms < 0) ctx.addIssue({ code: 'custom', message: 'must not be negative' });
    return ms;
  } catch (error) {
    ctx.addIssue({
      code: 'custom',
      message: error instanceof GoDurationError ? error.message : `not a duration: ${JSON.stringify(value)}`,
    });
    return z.NEVER;
  }
});

const wholeNumber = (min: number) =>
  z
    .union(
      [
        z.number(),
        z
          .string()
          .regex(/^\s*\d+\s*$/)
          .transform(Number),
      ],
      {
        message: 'must be a whole number',
      },
    )
    .pipe(z.number().int(`must be a whole number`).min(min, `must be at least ${min}`));

const flag = z.union([
  z.boolean(),
  z.enum(['true', 'false'], { message: 'must be true or false' }).transform((value) => value === 'true'),
]);

const secretKeyRef = z.strictObject({ name: objectNameSchema, key: z.string().min(1, 'must not be empty') });

const port = z.union([
  wholeNumber(1).pipe(z.number().max(65535, 'must be a port number (at most 65535)')),
  z.string().regex(dns1123Label, 'must be a port number or a container port name'),
]);

const tls = z.strictObject({
  ca: secretKeyRef.optional(),
  cert: secretKeyRef.optional(),
  key: secretKeyRef.optional(),
  insecureSkipVerify: flag.optional(),
  serverName: z.string().min(1).optional(),
});

const auth = z.union(
  [
    z.strictObject({ bearerToken: secretKeyRef }),
    z.strictObject({
      basicAuth: z.strictObject({
        username: z.union([z.string().min(1), secretKeyRef]),
        password: secretKeyRef,
      }),
    }),
  ],
  { message: 'must be {bearerToken: {name, key}} or {basicAuth: {username, password: {name, key}}}' },
);

/** How the pods are found and scraped; everything optional, defaults from the operator's conventions. */
const podAccess = z
  .strictObject({
    /** A label selector naming the pods, instead of the operator's labels of the named object. */
    selector: z.string().min(1).optional(),
    port: port.optional(),
    scheme: z.enum(['http', 'https']).optional(),
    tls: tls.optional(),
    auth: auth.optional(),
    scrapeTimeout: durationMs.optional(),
    /** At most maxScrapeBytesCap (docs/gates.md, "Limits of a scrape"). */
    maxScrapeBytes: wholeNumber(1024)
      .pipe(
        z
          .number()
          .max(
            maxScrapeBytesCap,
            `must be at most ${maxScrapeBytesCap} (${maxScrapeBytesCap / 1024 / 1024} MiB), the cap of a scraped page`,
          ),
      )
      .optional(),
  })
  .superRefine((value, ctx) => {
    if ((value.tls?.cert === undefined) !== (value.tls?.key === undefined)) {
      ctx.addIssue({ code: 'custom', path: ['tls'], message: 'cert and key must be set together' });
    }
  });

const common = {
  /** The zone as the Rollout's vmzones.io/spec names it; zone settings come from there by default. */
  zone: dnsLabelSchema('a zone name').optional(),
  namespace: namespaceNameSchema.optional(),
  /** The registered cluster (docs/multicluster.md) of the objects this config names itself; objects taken from
   *  the spec document follow the spec's own cluster fields. */
  cluster: clusterNameSchema.optional(),
  /** How long one measurement waits for its gate; 0s = one reading, judged at once. */
  timeout: durationMs.optional(),
  /** Time between readings while waiting. */
  pollInterval: durationMs.optional(),
};

/** The zone's object named explicitly, at most one kind (docs/zone-kinds.md); else the zone's from the spec. */
const zoneObject = {
  vmcluster: objectNameSchema.optional(),
  vmsingle: objectNameSchema.optional(),
  vlcluster: objectNameSchema.optional(),
};

function atMostOneZoneObject(value: Partial<Record<ZoneKindField, string>>, ctx: z.RefinementCtx): void {
  const set = zoneKindFields.filter((k) => value[k] !== undefined);
  if (set.length > 1) {
    ctx.addIssue({
      code: 'custom',
      path: [set[1] as string],
      message: `set one of ${set.join(', ')}, not several`,
    });
  }
}

/** `cluster` places what the config names; with nothing named it would place nothing, which is a mistake worth naming. */
function clusterPlacesSomething(
  value: { cluster?: string | undefined },
  named: boolean,
  what: string,
  ctx: z.RefinementCtx,
): void {
  if (value.cluster !== undefined && !named) {
    ctx.addIssue({
      code: 'custom',
      path: ['cluster'],
      message: `applies to the objects the config names (${what}); without them the zone's cluster comes from the spec document`,
    });
  }
}

/** The zone object a gate config names explicitly, with its kind. */
export function explicitZoneObject(
  config: Partial<Record<ZoneKindField, string>>,
): { kind: ZoneKind; name: string } | undefined {
  const field = zoneKindFields.find((k) => config[k] !== undefined);
  return field === undefined ? undefined : { kind: zoneKinds[field], name: config[field] as string };
}

const readyGate = z
  .strictObject({
    gate: z.literal('vmclusterReady'),
    ...common,
    ...zoneObject,
    /** A generation the zone's object must have reached (e.g. the one a step wrote). */
    generation: wholeNumber(1).optional(),
  })
  .superRefine((value, ctx) => {
    atMostOneZoneObject(value, ctx);
    clusterPlacesSomething(value, explicitZoneObject(value) !== undefined, zoneKindFields.join(', '), ctx);
  });

/** The most consecutive good rounds a drain gate may ask for (docs/scale.md, "Limits"). */
export const maxConsecutiveRounds = 30;

const drainGate = z
  .strictObject({
    gate: z.literal('vmagentQueueDrained'),
    ...common,
    ...zoneObject,
    vmagent: objectNameSchema.optional(),
    vmagents: z.array(objectNameSchema).min(1).optional(),
    pods: podAccess.optional(),
    /** The zone's queue: the URL as spec.remoteWrite lists it, or its 1-based position there. */
    remoteWriteUrl: z.string().min(1).optional(),
    remoteWriteIndex: wholeNumber(1).optional(),
    /** The zone's queue: the spec.remoteWrite entry whose host is one of these (the spec's zones.<z>.vminsertHosts). */
    vminsertHosts: z.array(hostNameSchema).min(1).optional(),
    /** At most maxConsecutiveRounds: the rounds are stored in the AnalysisRun (docs/scale.md, "Limits"). */
    consecutiveRounds: wholeNumber(1)
      .pipe(
        z
          .number()
          .max(
            maxConsecutiveRounds,
            `must be at most ${maxConsecutiveRounds} (each round is stored in the AnalysisRun; a longer proof is a longer roundSpacing)`,
          ),
      )
      .optional(),
    maxPendingDataBytes: wholeNumber(0).optional(),
    maxOnDiskPendingBytes: wholeNumber(0).optional(),
    roundSpacing: durationMs.optional(),
    ingestionExpected: flag.optional(),
    /** Count only rounds taken while the zone's VMCluster is ready (default true when it is known). */
    requireZoneReady: flag.optional(),
  })
  .superRefine((value, ctx) => {
    atMostOneZoneObject(value, ctx);
    clusterPlacesSomething(
      value,
      explicitZoneObject(value) !== undefined ||
        value.vmagent !== undefined ||
        value.vmagents !== undefined ||
        value.pods?.selector !== undefined,
      `${zoneKindFields.join(', ')}, vmagent(s), pods.selector`,
      ctx,
    );
    if (value.vmagent !== undefined && value.vmagents !== undefined) {
      ctx.addIssue({ code: 'custom', path: ['vmagents'], message: 'set vmagent or vmagents, not both' });
    }
    if (value.pollInterval !== undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['pollInterval'],
        message: 'vmagentQueueDrained takes a reading every roundSpacing; set that instead',
      });
    }
  });

const reloadGate = z
  .strictObject({
    gate: z.literal('vmauthReloaded'),
    ...common,
    /** The VMAuth whose pods to check (operator labels); or pods.selector for a helm-managed vmauth. */
    vmauth: objectNameSchema.optional(),
    pods: podAccess.optional(),
    /** The operator's config-reloader sidecar and the Secret key it watches, for content-hash evidence. */
    reloader: z.strictObject({ port: port.optional(), configSecret: secretKeyRef }).optional(),
    /** RFC 3339: the config must have been loaded at or after this time. Default: the config source's last write. */
    since: z
      .string()
      .refine((value) => /^\d{4}-\d{2}-\d{2}T/.test(value) && !Number.isNaN(Date.parse(value)), {
        message: 'must be an RFC 3339 time such as 2026-05-01T12:00:00Z',
      })
      .optional(),
  })
  .superRefine((value, ctx) =>
    clusterPlacesSomething(
      value,
      value.vmauth !== undefined || value.pods?.selector !== undefined,
      'vmauth, pods.selector',
      ctx,
    ),
  );

/** A fraction between 0 and 1 (args arrive as text). */
const fraction = z
  .union(
    [
      z.number(),
      z
        .string()
        .regex(/^\s*\d+(\.\d+)?\s*$/, 'must be a number')
        .transform(Number),
    ],
    {
      message: 'must be a number',
    },
  )
  .pipe(z.number().min(0, 'must be at least 0').max(1, 'must be at most 1 (a fraction: 0.01 is 1%)'));

/** An argument a template may leave empty ('' is "the default"), as args cannot be left out. */
const emptyIsUnset = <T extends z.ZodType>(schema: T) =>
  z.preprocess((value) => (value === '' ? undefined : value), schema.optional());

const answersGate = z
  .strictObject({
    gate: z.literal('zoneAnswers'),
    /** The changed zone; its object, cluster and kind come from the spec document. */
    zone: dnsLabelSchema('a zone name').optional(),
    namespace: namespaceNameSchema.optional(),
    timeout: durationMs.optional(),
    pollInterval: durationMs.optional(),
    /** The zone to compare with; default: the first other zone of the spec that is operational and serving. */
    servingZone: emptyIsUnset(dnsLabelSchema('a zone name')),
    /** The series (MetricsQL) or log filter (LogsQL) whose series and sample counts are compared. */
    selector: emptyIsUnset(z.string().min(1)),
    /** A query of the user's own, instead of the counts; `$window`, `$start` and `$end` are replaced. */
    query: emptyIsUnset(z.string().min(1)),
    /** How far back the window reaches from its end; default: the zone's walk and a minute before it, at least 5m. */
    window: emptyIsUnset(durationMs),
    /** How long before now the window ends, so that data still on its way counts in neither zone. */
    lag: emptyIsUnset(durationMs),
    /** The largest relative difference that still matches (0.001 = 0.1%). */
    tolerance: emptyIsUnset(fraction),
    /** Each pod must answer its queries within this long. */
    maxLatency: emptyIsUnset(durationMs),
    /** A VMCluster's tenant (accountID, or accountID:projectID). */
    tenant: emptyIsUnset(z.string().regex(/^\d+(:\d+)?$/, 'must be an accountID or accountID:projectID')),
    /** Where a VMCluster's vmselect pods answer instead of /select/<tenant>/prometheus. */
    vmselectPathPrefix: emptyIsUnset(z.string().regex(/^\/[^?#\s]*$/, 'must be a path starting with /')),
  })
  .superRefine((value, ctx) => {
    if (value.selector !== undefined && value.query !== undefined) {
      ctx.addIssue({ code: 'custom', path: ['query'], message: 'set selector or query, not both' });
    }
  });

export type ReadyGateConfig = z.infer<typeof readyGate>;
export type DrainGateConfig = z.infer<typeof drainGate>;
export type ReloadGateConfig = z.infer<typeof reloadGate>;
export type AnswersGateConfig = z.infer<typeof answersGate>;
export type PodAccessConfig = z.infer<typeof podAccess>;
export type GateConfig = ReadyGateConfig | DrainGateConfig | ReloadGateConfig | AnswersGateConfig;

const schemas = {
  vmclusterReady: readyGate,
  vmagentQueueDrained: drainGate,
  vmauthReloaded: reloadGate,
  zoneAnswers: answersGate,
};

function formatPath(path: readonly PropertyKey[]): string {
  return path.length === 0
    ? '(config)'
    : path.map((p) => (typeof p === 'number' ? `[${p}]` : String(p))).join('.');
}

/** What `pods.tls.insecureSkipVerify: true` risks, for the gate's message, the log and `vmzones lint`. */
export const insecureSkipVerifyWarning =
  "pods.tls.insecureSkipVerify is true: the scraped pods' certificates are not verified, so whoever is on the " +
  'path can read the scrape credential and answer with figures of its choosing';

/** The warning for a parsed config that turns TLS verification off, if it does. */
export function gateTlsWarning(config: GateConfig): string | undefined {
  return 'pods' in config && config.pods?.tls?.insecureSkipVerify === true
    ? insecureSkipVerifyWarning
    : undefined;
}

/** Validates the plugin config of one metric; throws GateConfigError naming every problem. */
export function parseGateConfig(raw: unknown): GateConfig {
  if (raw === undefined || raw === null) {
    throw new GateConfigError([`the metric has no provider.plugin["${gatesPluginName}"] config`]);
  }
  if (typeof raw !== 'object' || Array.isArray(raw)) {
    throw new GateConfigError([
      `(config): must be an object, got ${Array.isArray(raw) ? 'a list' : typeof raw}`,
    ]);
  }
  const gate = (raw as { gate?: unknown }).gate;
  if (gate === undefined) {
    throw new GateConfigError([`gate: required, one of ${gateNames.join(', ')}`]);
  }
  if (typeof gate !== 'string' || !(gateNames as readonly string[]).includes(gate)) {
    throw new GateConfigError([
      `gate: unknown gate ${JSON.stringify(gate)} (known: ${gateNames.join(', ')})`,
    ]);
  }
  const result = schemas[gate as GateName].safeParse(raw);
  if (!result.success) {
    throw new GateConfigError(
      result.error.issues.map((issue) => `${formatPath(issue.path)}: ${issue.message}`),
    );
  }
  return result.data;
}
