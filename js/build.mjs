// Bundles js/src/index.js into autograd_widget/static/widget.js (ESM, what anywidget's _esm loads).
// `node build.mjs` builds once; `node build.mjs --watch` rebuilds on change.
import * as esbuild from 'esbuild';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const require = createRequire(import.meta.url);
const outdir = join(here, '..', 'autograd_widget', 'static');

/** @type {import('esbuild').BuildOptions} */
const options = {
  entryPoints: { widget: join(here, 'src', 'index.js') },
  outdir,
  bundle: true,
  format: 'esm',
  target: 'es2020',
  minify: true,
  legalComments: 'none',
  logLevel: 'info',
  metafile: true,
  // plotly.js is CommonJS written for browserify: it reads `global`, probes `define.amd` and
  // process.env, and its WebGL stack (scattergl -> typedarray-pool, gl-text) uses Node's Buffer.
  // These are the same substitutions plotly's own esbuild-config.js makes, plus a Buffer polyfill.
  define: {
    global: 'globalThis',
    'define.amd': 'false',
    'process.env.NODE_DEBUG': 'false',
    'process.env.NODE_ENV': '"production"',
  },
  alias: {
    regl: '@plotly/regl', // gl-text otherwise pulls a second copy of regl
    buffer: require.resolve('buffer/'),
  },
  inject: [join(here, 'src', 'shims', 'buffer.js')],
  plugins: [
    {
      // plotly's registry require()s maplibre's 81 KB stylesheet for map traces, statically, so
      // esbuild would emit it as widget.css although no map trace is registered: drop it.
      name: 'no-maplibre-css',
      setup(build) {
        build.onResolve({ filter: /^maplibre-gl\/dist\/maplibre-gl\.css$/ }, () => ({
          path: 'maplibre-gl.css',
          namespace: 'empty',
        }));
        build.onLoad({ filter: /.*/, namespace: 'empty' }, () => ({ contents: '', loader: 'js' }));
      },
    },
  ],
};

if (process.argv.includes('--watch')) {
  const ctx = await esbuild.context(options);
  await ctx.watch();
} else {
  const result = await esbuild.build(options);
  if (process.argv.includes('--analyze')) {
    console.log(await esbuild.analyzeMetafile(result.metafile));
  }
  for (const [file, { bytes }] of Object.entries(result.metafile.outputs)) {
    console.log(`${file}: ${(bytes / 1024).toFixed(0)} KiB`);
  }
}
