// Bundles the plugin, the kubectl plugin and the conformance test fixture into single ESM files:
// the controller launches `<node> dist/vmzones.mjs`; users run `vmzones` / `kubectl vmzones` (package.json bin).
// No code splitting: each bundle stays one file to copy, and esbuild keeps a module reached only through
// import() uninitialized until that import() runs, which is what lets the CLI's offline commands run on Node 20
// although the plugin's own modules in the same file need Node 24 (plugin/main.ts, docs/cli.md).

import { chmodSync, readFileSync, writeFileSync } from 'node:fs';
import { isBuiltin } from 'node:module';
import { dirname, join } from 'node:path';
import { build, type Plugin } from 'esbuild';

const repoRoot = join(import.meta.dirname, '..');
const pkg = JSON.parse(readFileSync('package.json', 'utf8')) as {
  version: string;
  engines: { node: string };
};

/**
 * zod re-exports every one of its ~50 message locales (`z.locales`); vmzones uses the English messages zod configures
 * itself (zod/v4/classic/schemas.js imports locales/en.js directly) and never `z.locales`. Bundling only `en` there
 * drops ~300 KB of source that V8 would keep and evaluate in every plugin process (docs/deploy.md, "Memory").
 */
const zodEnglishOnly: Plugin = {
  name: 'zod-english-only',
  setup(b) {
    b.onResolve({ filter: /^\.\.\/locales\/index\.js$/ }, (args) =>
      /[/\\]node_modules[/\\]zod[/\\]/.test(args.importer)
        ? { path: join(dirname(args.importer), '..', 'locales', 'en.js'), namespace: 'zod-english-only' }
        : undefined,
    );
    b.onLoad({ filter: /.*/, namespace: 'zod-english-only' }, (args) => ({
      contents: `export { default as en } from ${JSON.stringify(args.path)};`,
      resolveDir: dirname(args.path),
    }));
  },
};

/**
 * What @kubernetes/client-node and undici would evaluate in every process for nothing vmzones calls (docs/deploy.md,
 * "Memory"): client-node's KubeConfig imports its generated API clients (only makeApiClient uses them) and the
 * azure/gcp auth-providers kubectl removed in 1.26, and openid-client under its OIDC auth-provider, whose refresh
 * vmzones does itself (plugin/kube/oidc-refresh.ts); undici's index evaluates mock agents, cache stores, WebSocket and
 * more, and carries a second HTTP parser (milo, used only with UNDICI_USE_MILO); express's body parsers carry
 * iconv-lite's character set tables for request bodies, and the observe endpoint reads none. Each is replaced by a
 * small module of scripts/bundle/ (the file says what it keeps; not-bundled.cjs fails by name if ever used).
 */
const bundleOnlyWhatIsCalled: Plugin = {
  name: 'bundle-only-what-is-called',
  setup(b) {
    const clientNode = /[/\\]node_modules[/\\]@kubernetes[/\\]client-node[/\\]dist[/\\]config\.js$/;
    const replacements: [RegExp, (importer: string) => boolean, string][] = [
      [/^\.\/gen\/index\.js$/, (i) => clientNode.test(i), 'client-node-api-clients.mjs'],
      [/^\.\/(azure|gcp)_auth\.js$/, (i) => clientNode.test(i), 'removed-auth-provider.mjs'],
      [
        /^openid-client$/,
        (i) => /[/\\]client-node[/\\]dist[/\\]oidc_auth\.js$/.test(i),
        'openid-client-replaced.mjs',
      ],
      [/^undici$/, (i) => /[/\\](watch|isomorphic-fetch)\.js$/.test(i), 'undici-fetch.mjs'],
      [/^undici$/, (i) => !/undici-(parts|fetch)\.mjs$/.test(i), 'undici-parts.mjs'],
      [/^\.\.\/milo\/(no-)?simd\.js$/, (i) => /[/\\]undici[/\\]/.test(i), 'not-bundled.cjs'],
      [/^iconv-lite$/, () => true, 'not-bundled.cjs'],
    ];
    for (const [filter, applies, file] of replacements)
      b.onResolve({ filter }, (args) =>
        applies(args.importer) ? { path: join(import.meta.dirname, 'bundle', file) } : undefined,
      );
  },
};

/**
 * Modules a plugin process needs only once it talks to Kubernetes or scrapes a pod, evaluated then instead of at start
 * (start → handshake: the controller waits for it; docs/deploy.md, "Memory"): client-node's KubeConfig (and with it
 * js-yaml, openid-client, its proxy agents), and undici, as vmzones' modules import them; client-node's own proxy
 * agents (socks, ip-address, debug), which only a kubeconfig's `proxy-url` uses. Each such import becomes a small
 * CommonJS module whose named exports are getters that require() the real module the first time one is read
 * (esbuild keeps a module reached only through require() unevaluated until then). The names are the ones the
 * importers use (a name missing here would read as undefined: test/unit/cli/subprocess.test.ts and the e2e tests
 * run the bundle).
 */
const lazyImports: { module: string; names: readonly string[]; importedFrom: RegExp }[] = [
  {
    module: '@kubernetes/client-node/dist/config.js',
    names: ['KubeConfig'],
    importedFrom: /[/\\]plugin[/\\]/,
  },
  { module: 'undici', names: ['Agent'], importedFrom: /[/\\]plugin[/\\]/ },
  { module: 'socks', names: ['SocksClient'], importedFrom: /[/\\]client-node[/\\]/ },
  { module: 'socks-proxy-agent', names: ['SocksProxyAgent'], importedFrom: /[/\\]client-node[/\\]/ },
  { module: 'hpagent', names: ['HttpProxyAgent', 'HttpsProxyAgent'], importedFrom: /[/\\]client-node[/\\]/ },
];
const lazyNamespace = 'vmzones-lazy';
const evaluatedOnFirstUse: Plugin = {
  name: 'evaluated-on-first-use',
  setup(b) {
    for (const lazy of lazyImports) {
      const filter = new RegExp(`^${lazy.module.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}$`);
      b.onResolve({ filter }, (args) =>
        args.namespace !== lazyNamespace && lazy.importedFrom.test(args.importer)
          ? { path: lazy.module, namespace: lazyNamespace }
          : undefined,
      );
    }
    b.onLoad({ filter: /.*/, namespace: lazyNamespace }, (args) => {
      const names = lazyImports.find((l) => l.module === args.path)?.names ?? [];
      const getters = names.map((name) => `get ${name}() { return load().${name}; }`);
      return {
        contents: `let loaded; const load = () => (loaded ??= require(${JSON.stringify(args.path)}));\nmodule.exports = { ${getters.join(', ')} };\n`,
        loader: 'js',
        resolveDir: repoRoot,
      };
    });
  },
};

/**
 * Node's builtins through require(), not ESM import: Node 24 builds an ES module facade of a builtin by reading every
 * export, which runs the builtin's lazy getters, and esbuild hoists a builtin's import to the top of the bundle even
 * when the importing module is evaluated only later, so all of it happened before the handshake (docs/deploy.md,
 * "Memory"): node:http's `WebSocket`, `CloseEvent`… getters evaluate Node's own bundled undici (≈ 45 ms of CPU),
 * node:util's `TextDecoder` and node:fs's streams ≈ 20 ms, and `node:tls` (client-node's KubeConfig) loads OpenSSL's
 * bindings (≈ 20–40 ms, ≈ 3 MiB). Each import becomes a small CommonJS module that requires the builtin when its
 * importer is evaluated.
 */
const builtinsThroughRequire: Plugin = {
  name: 'builtins-through-require',
  setup(b) {
    b.onResolve({ filter: /^(node:)?[a-z_]+(\/[a-z_]+)?$/ }, (args) =>
      args.namespace === 'vmzones-builtin' || !isBuiltin(args.path)
        ? undefined
        : { path: args.path.replace(/^node:/, ''), namespace: 'vmzones-builtin' },
    );
    b.onLoad({ filter: /.*/, namespace: 'vmzones-builtin' }, (args) => ({
      contents: `module.exports = require(${JSON.stringify(`node:${args.path}`)});\n`,
      loader: 'js',
    }));
  },
};

// name → [entry, oldest Node it must load on]
const entries: Record<string, [string, string]> = {
  vmzones: ['plugin/main.ts', 'node20'],
  'kubectl-vmzones': ['plugin/cli/kubectl-vmzones.ts', 'node20'],
  'fixture-plugin': ['test/fixtures/fixture-plugin.ts', 'node24'],
};

for (const [name, [entry, target]] of Object.entries(entries)) {
  const outfile = `dist/${name}.mjs`;
  const result = await build({
    entryPoints: [entry],
    // What each package adds to the bundle (docs/deploy.md, "Memory"): dist/<name>.meta.json, e.g. for esbuild's analyzer.
    metafile: process.env.VMZONES_BUILD_META === '1',
    outfile,
    bundle: true,
    platform: 'node',
    target,
    format: 'esm',
    sourcemap: 'linked',
    legalComments: 'none',
    // Whitespace and syntax only (names are kept for stack traces; the linked source map maps positions back):
    // V8 keeps a bundle's whole source in the heap of every plugin process, so this is ~4 MiB of RSS per process
    // for vmzones.mjs (docs/testing.md, "Plugin process").
    minifyWhitespace: true,
    minifySyntax: true,
    define: {
      VMZONES_VERSION: JSON.stringify(pkg.version),
      VMZONES_NODE_ENGINE: JSON.stringify(pkg.engines.node),
    },
    banner: {
      // A shebang for running by hand; bundled CommonJS dependencies may still call require().
      js: "#!/usr/bin/env node\nimport { createRequire as __vmzonesCreateRequire } from 'node:module'; const require = __vmzonesCreateRequire(import.meta.url);",
    },
    plugins: [zodEnglishOnly, builtinsThroughRequire, evaluatedOnFirstUse, bundleOnlyWhatIsCalled],
    logLevel: 'warning',
  });
  if (result.metafile !== undefined) writeFileSync(`dist/${name}.meta.json`, JSON.stringify(result.metafile));
  chmodSync(outfile, 0o755);
  requireOneByteSource(outfile);
}

/**
 * V8 keeps a script's source text in the heap of every process that runs it, at one byte a character only while
 * every character is at most U+00FF: a single other one (a regular expression literal, which esbuild leaves as
 * written) doubles it, 4.6 → 9.1 MiB for vmzones.mjs (docs/deploy.md, "Memory"). Fails the build naming it.
 */
function requireOneByteSource(file: string): void {
  const text = readFileSync(file, 'utf8');
  let at = 0;
  while (at < text.length && text.charCodeAt(at) <= 0xff) at++;
  if (at === text.length) return;
  const line = text.slice(0, at).split('\n').length;
  throw new Error(
    `${file}: character ${JSON.stringify(text[at])} (U+${text.codePointAt(at)?.toString(16).toUpperCase()}) at line ${line} makes V8 keep the whole bundle at two bytes a character; write it as a \\u escape in the source (${JSON.stringify(text.slice(Math.max(0, at - 40), at + 10))})`,
  );
}
console.log(
  `built ${Object.keys(entries)
    .map((n) => `dist/${n}.mjs`)
    .join(', ')}`,
);
