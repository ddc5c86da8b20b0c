// The init container's entrypoint (copied into the runtime folder as install.mjs by scripts/package.ts and run
// by the runtime's own node: the image has no shell). Copies the runtime folder it lives in into the folder
// given as its argument, the emptyDir the controller's container mounts at /opt/vmzones (docs/deploy.md).
import { cpSync, readdirSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const target = process.argv[2];
if (!target) {
  process.stderr.write('usage: install.mjs TARGET_FOLDER\n');
  process.exit(2);
}
const source = dirname(fileURLToPath(import.meta.url));
const started = Date.now();
let files = 0;
let bytes = 0;
for (const entry of readdirSync(source)) {
  // A restarted init container finds the previous copy: overwrite it.
  cpSync(join(source, entry), join(target, entry), {
    recursive: true,
    force: true,
    preserveTimestamps: true,
  });
}
const count = (dir) => {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) count(path);
    else {
      files += 1;
      bytes += statSync(path).size;
    }
  }
};
count(target);
process.stdout.write(
  `vmzones runtime copied from ${source} to ${target}: ${files} files, ${bytes} bytes in ${Date.now() - started} ms\n`,
);
