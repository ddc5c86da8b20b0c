// Runs a process the way a container runtime would run it in a pod, without one: in its own mount and PID
// namespaces, chrooted into a root folder that is mounted read-only, as a non-root uid, with the pod's volumes
// bind-mounted as the only writable places, and /proc and the few device nodes every container gets.

import { cpSync, existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

export interface Bind {
  /** The folder on the host (an emptyDir's backing folder). */
  host: string;
  /** Where the container sees it. */
  at: string;
  readOnly?: boolean;
}

export interface RootProcess {
  root: string;
  binds: Bind[];
  uid: number;
  cwd: string;
  argv: string[];
}

/** The device nodes a container runtime puts into every container's /dev. */
const devices = ['null', 'zero', 'random', 'urandom'];

const quote = (s: string) => `'${s.replaceAll("'", `'\\''`)}'`;

/**
 * `unshare` argv for the process: the outer unshare makes the namespaces and mounts (the host's tools do that),
 * the inner one chroots, changes into cwd and drops to uid:uid before it execs argv[0] from inside the root.
 */
export function rootCommand(p: RootProcess): { command: string; args: string[] } {
  for (const sub of ['proc', 'dev', ...p.binds.map((b) => b.at.slice(1))]) {
    mkdirSync(join(p.root, sub), { recursive: true });
  }
  for (const device of devices) writeFileSync(join(p.root, 'dev', device), '');
  const root = quote(p.root);
  const lines = [
    'set -e',
    `mount --bind ${root} ${root}`,
    `mount -o remount,bind,ro ${root}`,
    ...p.binds.flatMap((b) => {
      const at = quote(join(p.root, b.at));
      return [
        `mount --bind ${quote(b.host)} ${at}`,
        ...(b.readOnly ? [`mount -o remount,bind,ro ${at}`] : []),
      ];
    }),
    `mount -t proc proc ${quote(join(p.root, 'proc'))}`,
    ...devices.map((d) => `mount --bind /dev/${d} ${quote(join(p.root, 'dev', d))}`),
    `exec unshare --root=${root} --wd=${quote(p.cwd)} --setuid=${p.uid} --setgid=${p.uid} -- ${p.argv.map(quote).join(' ')}`,
  ];
  return {
    command: 'unshare',
    args: [
      '--mount',
      '--propagation=private',
      '--pid',
      '--fork',
      '--kill-child',
      '--',
      'sh',
      '-c',
      lines.join('\n'),
    ],
  };
}

/** The environment a pod's container starts with: PATH and HOME of the image, the service host, nothing else. */
export function containerEnv(home: string, extra: Record<string, string>): Record<string, string> {
  return { PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin', HOME: home, ...extra };
}

const passwd = `root:x:0:0:root:/root:/sbin/nologin
nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin
nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin
argo-rollouts:x:999:999:argo-rollouts:/home/argo-rollouts:/sbin/nologin
`;
const group = `root:x:0:
nobody:x:65534:
nonroot:x:65532:
argo-rollouts:x:999:
`;

/**
 * A root folder with what distroless/static holds (CA certificates, passwd and group, tzdata) and nothing else,
 * plus the given files (the controller binary, the service account files a pod gets mounted).
 */
export function distrolessStaticRoot(root: string, files: Record<string, string | Buffer>): void {
  const caBundle = '/etc/ssl/certs/ca-certificates.crt';
  const zoneinfo = '/usr/share/zoneinfo';
  for (const needed of [caBundle, zoneinfo]) {
    if (!existsSync(needed))
      throw new Error(`${needed} is missing on this host (Debian: ca-certificates, tzdata)`);
  }
  const write = (path: string, content: string | Buffer, mode = 0o644) => {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), content, { mode });
  };
  write('/etc/passwd', passwd);
  write('/etc/group', group);
  cpSync(caBundle, join(root, caBundle), { dereference: true });
  cpSync(zoneinfo, join(root, zoneinfo), { recursive: true, dereference: true });
  for (const dir of ['/tmp', '/home/argo-rollouts', '/root']) mkdirSync(join(root, dir), { recursive: true });
  for (const [path, content] of Object.entries(files))
    write(path, content, path.startsWith('/bin/') ? 0o755 : 0o644);
}
