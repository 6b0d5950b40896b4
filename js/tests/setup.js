// @ts-check
// jsdom has no 2D canvas: every canvas gets a context that records what is drawn (fixtures.js).
// (Tests of pure modules run with no DOM at all: `// @vitest-environment node`.)
import { installFakeCanvas } from './fixtures.js';

if (typeof HTMLCanvasElement !== 'undefined') installFakeCanvas();
