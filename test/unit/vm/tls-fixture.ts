// Throwaway TLS material for scrape tests, made by the openssl CLI in a temporary folder: a CA, a server
// certificate for 127.0.0.1 and `vmagent.test`, and a client certificate, all signed by the CA; plus a
// second, unrelated CA that must not be trusted.

import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface TlsFixture {
  ca: string;
  otherCa: string;
  serverCert: string;
  serverKey: string;
  clientCert: string;
  clientKey: string;
}

function openssl(dir: string, args: string[]): void {
  execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
}

function makeCa(dir: string, name: string): void {
  openssl(dir, [
    'req',
    '-x509',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:P-256',
    '-nodes',
    '-days',
    '2',
    '-subj',
    `/CN=${name}`,
    '-keyout',
    `${name}.key`,
    '-out',
    `${name}.crt`,
  ]);
}

function makeLeaf(dir: string, name: string, extensions: string): void {
  openssl(dir, [
    'req',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:P-256',
    '-nodes',
    '-subj',
    `/CN=${name}`,
    '-keyout',
    `${name}.key`,
    '-out',
    `${name}.csr`,
  ]);
  writeFileSync(join(dir, `${name}.ext`), extensions);
  openssl(dir, [
    'x509',
    '-req',
    '-in',
    `${name}.csr`,
    '-CA',
    'ca.crt',
    '-CAkey',
    'ca.key',
    '-CAcreateserial',
    '-days',
    '2',
    '-extfile',
    `${name}.ext`,
    '-out',
    `${name}.crt`,
  ]);
}

export function makeTlsFixture(): TlsFixture {
  const dir = mkdtempSync(join(tmpdir(), 'vmzones-tls-'));
  try {
    makeCa(dir, 'ca');
    makeCa(dir, 'other');
    makeLeaf(dir, 'server', 'subjectAltName=IP:127.0.0.1,DNS:vmagent.test\nextendedKeyUsage=serverAuth\n');
    makeLeaf(dir, 'client', 'extendedKeyUsage=clientAuth\n');
    const read = (file: string) => readFileSync(join(dir, file), 'utf8');
    return {
      ca: read('ca.crt'),
      otherCa: read('other.crt'),
      serverCert: read('server.crt'),
      serverKey: read('server.key'),
      clientCert: read('client.crt'),
      clientKey: read('client.key'),
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
