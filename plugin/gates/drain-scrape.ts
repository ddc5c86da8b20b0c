// One scrape round of one agent for the vmagentQueueDrained gate: every pod of the agent is scraped and its
// zone queue picked by index and cross-checked by directory name, where the name is hashed from the URL the
// VMAgent spec lists at that index. A pod whose process was started with another -remoteWrite.url order (the
// spec was reordered, the pods still run the old args) is "not drained", saying that the order changed.

import type { ClusterRegistration } from '../kube/cluster-registry.ts';
import { namespacedName } from '../kube/objects.ts';
import { podScrapeFailure, podScrapeTarget } from '../vm/pod-proxy.ts';
import { describePod, listSelectedPods } from '../vm/pods.ts';
import { pickQueueSamples, queueMetricNamesOf, remoteWriteQueueDirName } from '../vm/remote-write.ts';
import { ScrapeError, scrapeMetrics } from '../vm/scrape.ts';
import type { ScrapeAccess } from '../vm/scrape-credentials.ts';
import { remoteWriteUrls, remoteWriteUrlsFromPod } from '../vm/vmagent.ts';
import type { DrainGateConfig } from './config.ts';
import type { AgentTarget } from './drain-targets.ts';
import type { GateContext } from './gate-reading.ts';
import type { PodScrape } from './queue-drain.ts';

class MalformedMetricsError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'MalformedMetricsError';
  }
}

export async function scrapeAgent(
  kube: GateContext['kube'],
  agent: AgentTarget,
  namespace: string,
  config: DrainGateConfig,
  access: ScrapeAccess,
  /** The agents' registered cluster: with pod access `proxy`, pods are scraped through its API server. */
  cluster?: ClusterRegistration,
): Promise<{ pods: PodScrape[]; keys: string[] }> {
  const { active } = await listSelectedPods(kube, namespace, agent.selector);
  const port = config.pods?.port ?? 'http';
  const specCount = agent.vmagent === undefined ? undefined : remoteWriteUrls(agent.vmagent).length;
  const names = queueMetricNamesOf(agent.writer);
  const scrapes = await Promise.all(
    active.map(async (object): Promise<PodScrape> => {
      const pod = describePod(object, port);
      if (pod.address === undefined) return { pod: pod.key, ok: false, error: pod.problem ?? 'no address' };
      const podUrls = remoteWriteUrlsFromPod(object);
      if (podUrls !== undefined && specCount !== undefined && podUrls.length !== specCount) {
        return {
          pod: pod.key,
          ok: false,
          error:
            `its process has ${podUrls.length} -remoteWrite.url values but ${agent.writer.kind} ${agent.key} lists ${specCount} ` +
            '(the pod runs another version of the spec; a rollout of the agent is in progress?)',
        };
      }
      // The queue's identity is the zone's URL as the spec lists it; the pod's own URL at the index is only
      // a fallback when nothing else names the zone's URL (pods named by a selector, no remoteWriteUrl).
      const identity = agent.specUrl ?? podUrls?.[agent.index - 1];
      const expectedDirName =
        identity === undefined ? undefined : await remoteWriteQueueDirName(agent.index, identity);
      const orderProblem =
        agent.specUrl === undefined || podUrls === undefined
          ? undefined
          : await processOrderProblem(podUrls, agent, expectedDirName as string);
      if (orderProblem !== undefined) return { pod: pod.key, ok: false, error: orderProblem };
      try {
        const address = pod.address;
        const page = await scrapeMetrics(
          podScrapeTarget({ namespace, name: pod.name, address }, access, cluster),
          Object.values(names),
          {
            ...(config.pods?.scrapeTimeout === undefined ? {} : { timeoutMs: config.pods.scrapeTimeout }),
            ...(config.pods?.maxScrapeBytes === undefined
              ? {}
              : { maxBodyBytes: config.pods.maxScrapeBytes }),
          },
        );
        return {
          pod: pod.key,
          ok: true,
          queue: pickQueueSamples(page.samples, {
            index: agent.index,
            names,
            ...(expectedDirName === undefined ? {} : { expectedDirName }),
          }),
        };
      } catch (error) {
        if (!(error instanceof ScrapeError)) throw error;
        if (error.kind === 'malformed') throw new MalformedMetricsError(`pod ${pod.key}: ${error.message}`);
        return { pod: pod.key, ok: false, error: podScrapeFailure(cluster, namespace, error) };
      }
    }),
  );
  const keys = scrapes.map((scrape) => scrape.pod);
  const missing = (agent.expectedPods ?? 0) - active.length;
  for (let position = 1; position <= missing; position++) {
    const key = `${namespacedName({ namespace, name: agent.key })}#missing-${position}`;
    keys.push(key);
    scrapes.push({
      pod: key,
      ok: false,
      error: `${agent.writer.kind} ${agent.key} asks for ${agent.expectedPods} pods but ${active.length} exist`,
    });
  }
  return { pods: scrapes, keys };
}

/**
 * Why the pod's process does not write the zone's queue at the spec's index, if it does not: the URLs it was
 * started with are compared by queue directory name (what vmagent hashes), never shown (they may hold credentials).
 */
async function processOrderProblem(
  podUrls: readonly string[],
  agent: AgentTarget,
  expectedDirName: string,
): Promise<string | undefined> {
  const atIndex = podUrls[agent.index - 1];
  if (atIndex !== undefined && (await remoteWriteQueueDirName(agent.index, atIndex)) === expectedDirName) {
    return undefined;
  }
  const hashOf = (url: string) =>
    remoteWriteQueueDirName(1, url).then(
      (name) => name.slice(2),
      () => '',
    );
  const wanted = expectedDirName.slice(expectedDirName.indexOf('_') + 1);
  const hashes = await Promise.all(podUrls.map(hashOf));
  const position = hashes.indexOf(wanted) + 1;
  const where =
    agent.vmagent === undefined
      ? 'the configured remoteWriteUrl'
      : `${agent.writer.kind} ${agent.key} spec.remoteWrite`;
  return position > 0
    ? `the -remoteWrite.url order changed: the zone's URL is at position ${agent.index} in ${where} but at ` +
        `${position} in the args the pod's process was started with (it still runs the old order; wait for the agent's rollout)`
    : `the pod's process was started without the zone's URL (position ${agent.index} in ${where}): the remote-write list was edited and the pod still runs the old args`;
}
