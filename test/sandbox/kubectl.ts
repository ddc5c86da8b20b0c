// The sandbox talks to its API server through the real kubectl it built (v1.34.5).

import { execFile } from 'node:child_process';
import { dirname, join } from 'node:path';

export class KubectlError extends Error {
  readonly args: string[];
  constructor(args: string[], stderr: string) {
    super(`kubectl ${args.join(' ')}: ${stderr.trim()}`);
    this.name = 'KubectlError';
    this.args = args;
  }
}

/**
 * `--kubeconfig` and a discovery cache of that cluster's own: kubectl caches discovery per host:port under
 * ~/.kube/cache for hours, and sandboxes reuse each other's loopback ports, so a shared cache can describe
 * another (gone) cluster's API.
 */
export function kubeconfigArgs(kubeconfig: string): string[] {
  return ['--kubeconfig', kubeconfig, `--cache-dir=${join(dirname(kubeconfig), '.kube-cache')}`];
}

export class Kubectl {
  readonly binary: string;
  readonly kubeconfig: string;

  constructor(binary: string, kubeconfig: string) {
    this.binary = binary;
    this.kubeconfig = kubeconfig;
  }

  run(args: string[], input?: string): Promise<string> {
    const full = kubeconfigArgs(this.kubeconfig).concat(args);
    return new Promise((resolve, reject) => {
      const child = execFile(this.binary, full, { maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) => {
        if (error) reject(new KubectlError(args, stderr || error.message));
        else resolve(stdout);
      });
      if (input !== undefined) child.stdin?.end(input);
    });
  }

  /** Server-side apply of objects (JSON is valid YAML), field manager "vmzones-sandbox". */
  async apply(objects: object[]): Promise<void> {
    const input = objects.map((o) => JSON.stringify(o)).join('\n---\n');
    await this.run(
      ['apply', '--server-side', '--force-conflicts', '--field-manager=vmzones-sandbox', '-f', '-'],
      input,
    );
  }

  async applyFiles(paths: string[]): Promise<void> {
    const files = paths.flatMap((p) => ['-f', p]);
    await this.run([
      'apply',
      '--server-side',
      '--force-conflicts',
      '--field-manager=vmzones-sandbox',
      ...files,
    ]);
  }

  async getJson<T = unknown>(args: string[]): Promise<T> {
    return JSON.parse(await this.run(['get', ...args, '-o', 'json'])) as T;
  }

  async raw(path: string): Promise<string> {
    return this.run(['get', '--raw', path]);
  }
}
