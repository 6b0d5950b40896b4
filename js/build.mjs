// Bundles js/src/index.js into autograd_widget/static/widget.js (+ widget.css): the front-end,
// sent once per page; and js/src/loader.js into static/loader.js: each widget's `_esm`, which
// asks the kernel for that bundle (see loader.js).
// `node build.mjs` builds once; `node build.mjs --watch` rebuilds on change.
import * as esbuild from 'esbuild';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const outdir = join(here, '..', 'autograd_widget', 'static');

/** @type {import('esbuild').BuildOptions} */
const options = {
  entryPoints: {
    widget: join(here, 'src', 'index.js'),
    loader: join(here, 'src', 'loader.js'),
  },
  outdir,
  bundle: true,
  format: 'esm',
  target: 'es2020',
  minify: true,
  legalComments: 'none',
  logLevel: 'warning',
  metafile: true,
};

if (process.argv.includes('--watch')) {
  const ctx = await esbuild.context(options);
  await ctx.watch();
} else {
  const result = await esbuild.build(options);
  if (process.argv.includes('--analyze')) {
    console.log(await esbuild.analyzeMetafile(result.metafile));
  }
  // One line per file, with what its size means: widget.js + widget.css go to a page once (the
  // loader fetches them), loader.js is every widget's `_esm`. tests/js/test_vitest_and_bundle.py caps the bundle.
  const sizes = Object.entries(result.metafile.outputs).map(
    ([file, { bytes }]) => `${file.split('/').pop()} ${(bytes / 1024).toFixed(0)} KiB`,
  );
  console.log(`built ${sizes.join(', ')} (bundle sent once per page; limit 1 MiB)`);
}
