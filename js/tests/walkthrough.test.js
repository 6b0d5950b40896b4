// @ts-check
import { describe, expect, it } from 'vitest';
import { decodeGraph, decodeState } from '../src/model.js';
import { Player, decodeBuffers, walkthroughBackend, walkthroughModel, walkthroughNonfinite } from '../src/walkthrough.js';
import { z } from './fixtures.js';

/** @param {ArrayLike<number>} values @param {any} Ctor @param {string} dtype */
function b64(values, Ctor, dtype) {
  const arr = Ctor.from(values);
  const bytes = new Uint8Array(arr.buffer);
  let str = '';
  for (const c of bytes) str += String.fromCharCode(c);
  return { dtype, bdata: btoa(str) };
}

/** What `save_html` embeds for z = x**2 + y (4 steps: Add, y, Pow, x). */
const walkthrough = () => z.walkthrough();
/** A `_state`'s arrays as plain lists, to compare the walkthrough with the live widget. */
function plain(raw) {
  const s = decodeState(raw, graph);
  return { nodeState: Array.from(s.nodeState), progress: Array.from(s.progress), edgeNorm: Array.from(s.edgeNorm), edgeFlag: Array.from(s.edgeFlag), edgeValues: [...s.edgeValues], status: s.status, next: s.next };
}
const graph = decodeGraph(z.graph());

describe('the walkthrough player', () => {
  it('decodes base64 buffers into typed arrays', () => {
    const d = /** @type {{ a: Float32Array, b: Int32Array[] }} */ (decodeBuffers({ a: b64([1.5, NaN], Float32Array, 'float32'), b: [b64([3], Int32Array, 'int32')] }));
    expect(d.a).toBeInstanceOf(Float32Array);
    expect(d.a[0]).toBe(1.5);
    expect(Number.isNaN(d.a[1])).toBe(true);
    expect(Array.from(d.b[0])).toEqual([3]);
  });

  it('steps forward and back to exactly the recorded states', () => {
    const p = new Player(walkthrough());
    const s0 = p.state();
    expect(s0.status).toBe('step 0 / 4 → next AddBackward0');
    expect(plain(s0)).toEqual(plain(z.state(0)));
    expect(p.forward()).toBe(true);
    let s = p.state();
    expect(plain(s)).toEqual(plain(z.state(1))); // what the live widget showed after one step
    expect(Array.from(s.node_state)).toEqual([2, 0, 1, 0]);
    expect(s.edge_values).toEqual({ 0: [1], 1: [1] });
    for (let k = 2; k <= 4; k++) {
      expect(p.forward()).toBe(true);
      expect(plain(p.state())).toEqual(plain(z.state(k)));
    }
    expect(p.forward()).toBe(false);
    expect(p.state().done).toBe(true);
    for (let k = 0; k < 4; k++) p.backward();
    s = p.state();
    expect(Array.from(s.node_state)).toEqual(Array.from(s0.node_state));
    expect(Number.isNaN(s.edge_norm[0])).toBe(true);
    expect(s.edge_values).toEqual({});
    expect(p.backward()).toBe(false);
  });

  it('hides inspector gradients that have not flowed yet', () => {
    const p = new Player(walkthrough());
    expect(p.inspect({ edge: 0 }).summary).toBeNull();
    expect(p.inspect({ node: 0 }).outgoing['n0:0']).toBeNull();
    p.forward();
    expect(p.inspect({ edge: 0 }).summary.values).toEqual([1]);
    expect(p.inspect({ id: 'n0' }).outgoing['n0:0'].values).toEqual([1]);
    expect(p.inspect({ node: 1 }).incoming).toEqual([null]); // Pow has not run yet
  });

  it('answers the view like a kernel would', async () => {
    const p = new Player(walkthrough());
    const model = walkthroughModel(p);
    const backend = walkthroughBackend(p, model);
    const seen = [];
    model.on('change:_state', () => seen.push(model.get('_state').position));
    const warnings = [];
    backend.onWarning((m) => warnings.push(m));
    backend.command({ type: 'step' });
    backend.command({ type: 'run' });
    expect(seen).toEqual([1, 4]);
    backend.command({ type: 'step' });
    expect(warnings[0]).toMatch(/end/);
    backend.command({ type: 'reset' });
    expect(model.get('_state').position).toBe(0);
    backend.command({ type: 'run_to', node: 0 });
    expect(model.get('_state').position).toBe(1);
    backend.command({ type: 'expand', group: 'x' });
    expect(warnings.at(-1)).toMatch(/live widget/);
    expect(backend.live).toBe(false);
    const found = /** @type {{ matches: { id: string }[] }} */ (await backend.request({ type: 'search', query: 'pow' }));
    expect(found.matches.map((m) => m.id)).toEqual(['n1']);
    expect(() => new Player({ format: 'nope' })).toThrow(/walkthrough/);
    expect(() => new Player({ ...walkthrough(), format: 'autograd_widget.recording/2' })).toThrow(/walkthrough/);
    for (const v of [null, undefined, 'autograd_widget.walkthrough/3', [walkthrough()]]) expect(() => new Player(v)).toThrow(/walkthrough/);
  });

  it('First NaN/Inf over a walkthrough that did not walk it answers nothing, and does not move', async () => {
    const p = new Player({ ...walkthrough(), first_nonfinite: null });
    expect(walkthroughNonfinite(p, { chunk_ms: 100 })).toEqual({ data: null, moved: false, select: null });
    expect(p.k).toBe(0);
    const backend = walkthroughBackend(p, walkthroughModel(p));
    expect(backend.answers.has('first_nonfinite')).toBe(false);
    await expect(backend.request({ type: 'first_nonfinite' })).rejects.toThrow(/live widget/);
  });
});
