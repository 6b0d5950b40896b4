// @ts-check
// decodeGraph / decodeState on the payloads Python sends (fixtures made by tests/js/js_fixtures.py):
// string tables and index buffers, derived fields (ids, polylines, label anchors, identity maps)
// rebuilt here, checked against Python's own `decode_graph` of the same payload.
import { describe, expect, it } from 'vitest';
import { bentPaths, decodeGraph, decodeState, pathMiddles } from '../src/model.js';
import { decodeBuffers } from '../src/walkthrough.js';
import { boxes, broken, dataView, folds, nonfinite, plumbing, z } from './fixtures.js';

describe('decodeGraph', () => {
  it('decodes the z = x**2 + y payload', () => {
    const g = decodeGraph(z.graph());
    expect(g.n).toBe(4);
    expect(g.m).toBe(3);
    expect(g.orientation).toBe('TB');
    expect(g.labels).toEqual(['Add', 'Pow', 'input 0 []', 'x']);
    expect(Array.from(g.x)).toEqual(Array.from(Float32Array.from(z.decoded.nodes.x)));
    expect(Array.from(g.src)).toEqual([0, 0, 1]);
    expect(Array.from(g.dst)).toEqual([1, 2, 3]);
    expect(Array.from(g.root)).toEqual([1, 0, 0, 0]);
    expect(g.indexOf.get('n2')).toBe(2);
    expect(g.inputs[0]).toEqual([{ shape: [], dtype: 'float32', device: 'cpu' }]);
    expect(g.modules).toEqual([null, null, null, null]);
    expect(Array.from(g.pathPtr)).toEqual(z.decoded.edges.path_ptr); // Python's polylines, bends and all
    // outgoing edges by source node
    expect(Array.from(g.outEdges.subarray(g.outPtr[0], g.outPtr[1]))).toEqual([0, 1]);
    expect(Array.from(g.outEdges.subarray(g.outPtr[1], g.outPtr[2]))).toEqual([2]);
    expect(g.outPtr[3] - g.outPtr[2]).toBe(0);
    // bounds: the layout's, boxes and frames included: they hold every node
    for (let i = 0; i < g.n; i++) expect(g.x[i] >= g.bounds[0] && g.x[i] <= g.bounds[1] && g.y[i] >= g.bounds[2] && g.y[i] <= g.bounds[3]).toBe(true);
  });

  it('survives an empty or missing payload', () => {
    for (const raw of [null, undefined, {}, { nodes: {}, edges: {} }]) {
      const g = decodeGraph(raw);
      expect(g.n).toBe(0);
      expect(g.m).toBe(0);
      expect(g.bounds).toEqual([0, 0, 0, 0]);
    }
  });

  it('computes each edge from its source through its bends to its target, and its midpoint', () => {
    const g = decodeGraph(z.graph());
    const nan = (/** @type {any} */ v) => (v === null || v === 'nan' ? NaN : v);
    expect(Array.from(g.pathX)).toEqual(Array.from(Float32Array.from(z.decoded.edges.path_x.map(nan))));
    expect(Array.from(g.pathY)).toEqual(Array.from(Float32Array.from(z.decoded.edges.path_y.map(nan))));
    for (let e = 0; e < g.m; e++) {
      const a = g.pathPtr[e];
      const b = g.pathPtr[e + 1] - 2; // the last point before the NaN
      expect([g.pathX[a], g.pathY[a]]).toEqual([g.x[g.src[e]], g.y[g.src[e]]]);
      expect([g.pathX[b], g.pathY[b]]).toEqual([g.x[g.dst[e]], g.y[g.dst[e]]]);
      // the label anchor is Python's (the middle of the polyline)
      expect(g.midX[e]).toBeCloseTo(z.decoded.edges.mid_x[e]);
      expect(g.midY[e]).toBeCloseTo(z.decoded.edges.mid_y[e]);
    }
  });

  it('clamps out-of-range edge endpoints', () => {
    const raw = z.graph();
    raw.edges.dst = dataView(new Int32Array([1, 99, -1]), 1);
    const g = decodeGraph(raw);
    expect(Array.from(g.dst)).toEqual([1, 0, 0]);
  });
});

/** The payload as a standalone export holds it: every buffer a typed array (`walkthrough.decodeBuffers`). */
function asWalkthrough(fx) {
  const g = fx.graph();
  for (const part of ['nodes', 'edges']) {
    for (const [k, v] of Object.entries(g[part])) {
      if (v instanceof DataView) {
        const [, Ctor] = Object.entries(TYPES).find(([name]) => g.dtypes[`${part}.${k}`] === name) ?? [];
        g[part][k] = new (Ctor ?? Int32Array)(/** @type {ArrayBuffer} */ (v.buffer.slice(v.byteOffset, v.byteOffset + v.byteLength)));
      }
    }
  }
  return g;
}
const TYPES = { uint8: Uint8Array, uint16: Uint16Array, uint32: Uint32Array, int32: Int32Array, float32: Float32Array };

const nums = (a) => Array.from(a, (v) => (Number.isNaN(v) ? 'nan' : v));

describe.each([
  ['z', z],
  ['boxes', boxes],
  ['broken', broken],
  ['folds', folds],
  ['plumbing', plumbing],
])('payload "%s"', (_, fx) => {
  it.each([
    ['DataViews (the live widget)', () => fx.graph()],
    ['typed arrays (a walkthrough)', () => asWalkthrough(fx)],
  ])('decodes like Python from %s', (__, make) => {
    const g = decodeGraph(make());
    const n = fx.decoded.nodes;
    const e = fx.decoded.edges;
    expect(g.n).toBe(n.count);
    expect(g.ids).toEqual(n.id);
    expect(g.labels).toEqual(n.label);
    expect(g.names).toEqual(n.name);
    expect(g.kinds).toEqual(n.kind);
    expect(g.modules).toEqual(n.module);
    expect(g.shapes).toEqual(n.shape);
    expect(g.inputs).toEqual(n.inputs.map((s) => s.map(([shape, dtype, device]) => ({ shape, dtype, device }))));
    expect(Array.from(g.root)).toEqual(n.root);
    expect(Array.from(g.members)).toEqual(n.members);
    expect(Array.from(g.savedState)).toEqual(n.saved_state);
    expect(Array.from(g.real)).toEqual(n.real);
    expect(nums(g.x)).toEqual(n.x);
    expect(nums(g.y)).toEqual(n.y);
    expect(g.m).toBe(e.count);
    expect(g.edgeIds).toEqual(e.id);
    expect(Array.from(g.src)).toEqual(e.src);
    expect(Array.from(g.dst)).toEqual(e.dst);
    expect(Array.from(g.outputNr)).toEqual(e.output_nr);
    expect(Array.from(g.inputNr)).toEqual(e.input_nr);
    expect(Array.from(g.edgeReal)).toEqual(e.real);
    expect(Array.from(g.pathPtr)).toEqual(e.path_ptr);
    expect(nums(g.pathX)).toEqual(e.path_x);
    expect(nums(g.pathY)).toEqual(e.path_y);
    expect(nums(g.midX)).toEqual(e.mid_x);
    expect(nums(g.midY)).toEqual(e.mid_y);
    for (let i = 0; i < g.n; i++) expect(g.indexOf.get(g.ids[i])).toBe(i);
    for (let k = 0; k < g.m; k++) expect(g.edgeIndexOf.get(g.edgeIds[k])).toBe(k);
  });
});

describe('payload details', () => {
  it('covers boxes, contracted edges, bends and derived ids', () => {
    const raw = plumbing.graph();
    const g = decodeGraph(raw);
    expect(g.boxes.length).toBe(1);
    expect(g.ids[g.boxes[0]]).toBe('group:0');
    expect(raw.edges.src_id.index.length).toBeGreaterThan(0);
    expect(g.pathPtr[g.m]).toBeGreaterThan(3 * g.m); // some edge bends
    expect(g.savedState.some((s) => s === 1)).toBe(true);
    expect(z.graph().nodes.id).toBeUndefined();
    expect(z.graph().edges.id).toBeUndefined();
  });

  it('reads ids Python names explicitly (a graph whose ids are not "n{i}")', () => {
    const raw = z.graph();
    raw.nodes.id = ['a', 'b', 'c', 'd'];
    const g = decodeGraph(raw);
    expect(g.ids).toEqual(['a', 'b', 'c', 'd']);
    expect(g.edgeIds).toEqual(['a:0', 'a:1', 'b:0']);
  });

  it('reads index buffers of every width, and a missing table entry as the fallback', () => {
    const u16 = (a) => dataView(new Uint16Array(a), 1);
    const g = decodeGraph({
      dtypes: { 'nodes.label': 'uint16', 'nodes.kind': 'uint8', 'edges.output_nr': 'uint16', 'nodes.module': 'uint32' },
      nodes: {
        count: 2,
        strings: ['a', 'b', null],
        kinds: ['function', 'group'],
        label: u16([1, 7]),
        kind: dataView(new Uint8Array([0, 1])),
        module: dataView(new Uint32Array([2, 0]), 2),
        x: new Float32Array([0, 1]),
        y: new Float32Array([0, 0]),
      },
      edges: { count: 1, src: new Int32Array([0]), dst: new Int32Array([1]), output_nr: u16([300]) },
    });
    expect(g.labels).toEqual(['b', '']);
    expect(g.kinds).toEqual(['function', 'group']);
    expect(g.modules).toEqual([null, 'a']);
    expect(g.ids).toEqual(['n0', 'group:a']);
    expect(Array.from(g.real)).toEqual([0, -1]);
    expect(Array.from(g.outputNr)).toEqual([300]);
    expect(g.edgeIds).toEqual(['n0:300']);
    expect(Array.from(g.pathX)).toEqual([0, 1, NaN]);
    expect(Array.from(g.midX)).toEqual([0.5]);
  });

  it('bentPaths runs through the bends and drops malformed ones', () => {
    const x = new Float32Array([0, 2]);
    const y = new Float32Array([0, -3]);
    const src = new Int32Array([0, 0]);
    const dst = new Int32Array([1, 1]);
    const bends = { bent: new Int32Array([1]), ptr: new Int32Array([0, 2]), x: new Float32Array([1, 1.5]), y: new Float32Array([-1, -2]) };
    const p = bentPaths(x, y, src, dst, bends);
    expect(Array.from(p.pathPtr)).toEqual([0, 3, 8]);
    expect(Array.from(p.pathX)).toEqual([0, 2, NaN, 0, 1, 1.5, 2, NaN]);
    expect(Array.from(pathMiddles(p.pathX, p.pathY, p.pathPtr).midY)).toEqual([-1.5, -1.5]);
    const bad = bentPaths(x, y, src, dst, { ...bends, ptr: new Int32Array([0, 9]) });
    expect(Array.from(bad.pathPtr)).toEqual([0, 3, 6]);
  });

  it('a walkthrough decodes its base64 buffers into the same graph', () => {
    const walk = z.walkthrough();
    const g = decodeGraph(decodeBuffers(walk.graph));
    expect(g.ids).toEqual(z.decoded.nodes.id);
    expect(g.edgeIds).toEqual(z.decoded.edges.id);
  });
});

describe('decodeState', () => {
  const g = decodeGraph(z.graph());

  it('decodes a mid-run state', () => {
    const s = decodeState(z.state(3), g);
    expect(s.position).toBe(3);
    expect(s.total).toBe(4);
    expect(s.next).toBe(3);
    expect(s.last).toBe(1);
    expect(Array.from(s.nodeState)).toEqual([2, 2, 2, 1]);
    expect(Array.from(s.progress)).toEqual([1, 1, 1, 0]);
    expect(Array.from(s.edgeNorm)).toEqual([1, 1, 4]);
    expect(Array.from(s.edgeFlag)).toEqual([1, 1, 1]);
    expect(s.edgeValues.get(2)).toEqual([4]);
    expect(s.normRange[0]).toBe(0);
    expect(s.normRange[1]).toBeCloseTo(Math.log10(4));
    expect(s.waiting).toEqual([{ slot: 0, shape: [], dtype: 'float32', norm: 4, values: [4] }]);
    expect(s.status).toBe('ran PowBackward0 (step 3 / 4) → next AccumulateGrad (x)');
    expect(s.error).toBeNull();
  });

  it('defaults everything before the first state', () => {
    const s = decodeState(null, g);
    expect(s.position).toBe(0);
    expect(s.next).toBe(-1);
    expect(Array.from(s.edgeNorm)).toEqual([NaN, NaN, NaN]);
    expect(Array.from(s.nodeState)).toEqual([0, 0, 0, 0]);
    expect(s.normRange).toBeNull();
    expect(s.status).toBe('');
  });

  it('reads a failed step: the error with its node and id', () => {
    const bg = decodeGraph(broken.graph());
    const s = decodeState(broken.state(broken.steps), bg);
    expect(s.error.node).toBe(2);
    expect(s.error.id).toBe('n2');
    expect(s.error.message).toMatch(/modified by an inplace operation/);
    expect(s.nodeState[2]).toBe(3);
  });

  it('reads non-finite values as Python spells them, and ignores bad edge keys', () => {
    const ng = decodeGraph(nonfinite.graph());
    const raw = nonfinite.state(nonfinite.steps - 1);
    expect(raw.edge_values['4']).toEqual(['inf', 1]);
    expect(raw.waiting[0].norm).toBe('nan');
    const s = decodeState({ ...raw, edge_values: { ...raw.edge_values, 99: [1], x: [2] } }, ng);
    expect(s.edgeValues.get(4)).toEqual([Infinity, 1]);
    expect(s.edgeValues.get(6)).toEqual([NaN, 0]);
    expect([...s.edgeValues.keys()].sort()).toEqual([0, 1, 2, 3, 4, 5, 6]);
    expect(s.waiting[0].norm).toBeNaN();
    expect(s.waiting[0].values).toEqual([NaN, 1]);
    expect(s.edgeFlag[4]).toBe(2);
  });

  it('reads an empty waiting slot as null', () => {
    const s = decodeState(z.state(1, { waiting: [null, z.state(1).waiting[0]] }), g);
    expect(s.waiting[0]).toBeNull();
    expect(s.waiting[1].norm).toBe(1);
  });
});
