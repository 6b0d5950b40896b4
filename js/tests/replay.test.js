import { describe, expect, it } from 'vitest';
import { Player, RECORDING_FORMAT, decodeBuffers, recordedBackend, recordedModel } from '../src/replay.js';

/** @param {ArrayLike<number>} values @param {any} Ctor @param {string} dtype */
function b64(values, Ctor, dtype) {
  const arr = Ctor.from(values);
  const bytes = new Uint8Array(arr.buffer);
  let s = '';
  for (const b of bytes) s += String.fromCharCode(b);
  return { dtype, bdata: btoa(s) };
}

/** A two-node chain a -> b recorded over two steps. */
function recording() {
  const u8 = (v) => b64(v, Uint8Array, 'uint8');
  const f32 = (v) => b64(v, Float32Array, 'float32');
  const i32 = (v) => b64(v, Int32Array, 'int32');
  return {
    format: RECORDING_FORMAT,
    title: 'test',
    height: 300,
    graph: {
      version: 1, orientation: 'TB', bounds: [0, 0, -1, 0], collapsed: [], show_plumbing: true,
      nodes: { count: 2, id: ['n0', 'n1'], label: ['Exp', 'x'], name: ['ExpBackward0', 'AccumulateGrad'],
        kind: ['function', 'input'], root: u8([1, 0]), module: [null, null], shape: ['', '[]'],
        inputs: [[], []], members: i32([0, 0]), real: i32([0, 1]), saved_state: u8([0, 0]),
        x: f32([0, 0]), y: f32([0, -1]) },
      edges: { count: 1, id: ['n0:0'], src: i32([0]), dst: i32([1]), output_nr: i32([0]), input_nr: i32([0]),
        real: i32([0]), path_x: f32([0, 0, NaN]), path_y: f32([0, -1, NaN]), path_ptr: i32([0, 3]),
        mid_x: f32([0]), mid_y: f32([-0.5]) },
    },
    state: { position: 0, total: 2, done: false, next: 0, next_id: 'n0', last: -1, status: 'step 0 / 2 — ExpBackward0',
      waiting: [], error: null, norm_range: null, notice: null,
      node_state: u8([1, 0]), progress: f32([0, 0]), edge_norm: f32([NaN]), edge_flag: u8([0]), edge_values: {} },
    steps: [
      { scalars: { position: 1, total: 2, done: false, next: 1, last: 0, status: 'step 1 / 2 — AccumulateGrad (x)', waiting: [], error: null, norm_range: [0.3, 0.3] },
        node_state: { index: i32([0, 1]), old: u8([1, 0]), new: u8([2, 1]) },
        progress: { index: i32([0]), old: f32([0]), new: f32([1]) },
        edge_norm: { index: i32([0]), old: f32([NaN]), new: f32([2]) },
        edge_flag: { index: i32([0]), old: u8([0]), new: u8([1]) },
        edge_values: { set: { 0: [2] }, unset: {}, was: {} } },
      { scalars: { position: 2, total: 2, done: true, next: -1, last: 1, status: 'step 2 / 2 — done', waiting: [], error: null, norm_range: [0.3, 0.3] },
        node_state: { index: i32([1]), old: u8([1]), new: u8([2]) },
        progress: { index: i32([1]), old: f32([0]), new: f32([1]) } },
    ],
    inspect: { nodes: { 0: { name: 'ExpBackward0', kind: 'function', incoming: [{ norm: 1 }], outgoing: { 'n0:0': { values: [2] } } } },
      edges: { 0: { id: 'n0:0', summary: { values: [2] } } } },
  };
}

describe('recorded replay', () => {
  it('decodes base64 buffers into typed arrays', () => {
    const d = decodeBuffers({ a: b64([1.5, NaN], Float32Array, 'float32'), b: [b64([3], Int32Array, 'int32')] });
    expect(d.a).toBeInstanceOf(Float32Array);
    expect(d.a[0]).toBe(1.5);
    expect(Number.isNaN(d.a[1])).toBe(true);
    expect(Array.from(d.b[0])).toEqual([3]);
  });

  it('steps forward and back to exactly the recorded states', () => {
    const p = new Player(recording());
    const s0 = p.state();
    expect(s0.status).toBe('step 0 / 2 — ExpBackward0');
    expect(p.forward()).toBe(true);
    let s = p.state();
    expect(s.status).toBe('step 1 / 2 — AccumulateGrad (x)');
    expect(Array.from(s.node_state)).toEqual([2, 1]);
    expect(s.edge_values).toEqual({ 0: [2] });
    expect(p.forward()).toBe(true);
    expect(p.forward()).toBe(false);
    expect(p.state().done).toBe(true);
    p.backward();
    p.backward();
    s = p.state();
    expect(Array.from(s.node_state)).toEqual(Array.from(s0.node_state));
    expect(Number.isNaN(s.edge_norm[0])).toBe(true);
    expect(s.edge_values).toEqual({});
    expect(p.backward()).toBe(false);
  });

  it('hides inspector gradients that have not flowed yet', () => {
    const p = new Player(recording());
    expect(p.inspect({ edge: 0 }).summary).toBeNull();
    expect(p.inspect({ node: 0 }).outgoing['n0:0']).toBeNull();
    p.forward();
    expect(p.inspect({ edge: 0 }).summary.values).toEqual([2]);
    expect(p.inspect({ id: 'n0' }).outgoing['n0:0'].values).toEqual([2]);
  });

  it('answers the view like a kernel would', async () => {
    const p = new Player(recording());
    const model = recordedModel(p);
    const backend = recordedBackend(p, model);
    const seen = [];
    model.on('change:_state', () => seen.push(model.get('_state').position));
    const warnings = [];
    backend.onWarning((m) => warnings.push(m));
    backend.command({ type: 'step' });
    backend.command({ type: 'run' });
    expect(seen).toEqual([1, 2]);
    backend.command({ type: 'step' });
    expect(warnings[0]).toMatch(/end/);
    backend.command({ type: 'reset' });
    expect(model.get('_state').position).toBe(0);
    backend.command({ type: 'run_to', node: 0 });
    expect(model.get('_state').position).toBe(1);
    backend.command({ type: 'expand', group: 'x' });
    expect(warnings.at(-1)).toMatch(/live widget/);
    expect(backend.live).toBe(false);
    const found = await backend.request({ type: 'search', query: 'exp' });
    expect(found.matches.map((m) => m.id)).toEqual(['n0']);
    expect(() => new Player({ format: 'nope' })).toThrow(/recording/);
  });
});
