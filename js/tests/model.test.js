import { describe, expect, it } from 'vitest';
import { decodeGraph, decodeState, straightPaths } from '../src/model.js';
import { zGraph, zState } from './fixtures.js';

describe('decodeGraph', () => {
  it.each([true, false])('decodes the z = x**2 + y payload (binary=%s)', (binary) => {
    const g = decodeGraph(zGraph({ binary }));
    expect(g.n).toBe(4);
    expect(g.m).toBe(3);
    expect(g.orientation).toBe('TB');
    expect(g.labels).toEqual(['Add', 'Pow', 'x', 'y']);
    expect(Array.from(g.x)).toEqual([0.5, 0, 0, 1]);
    expect(Array.from(g.src)).toEqual([0, 0, 1]);
    expect(Array.from(g.dst)).toEqual([1, 3, 2]);
    expect(Array.from(g.root)).toEqual([1, 0, 0, 0]);
    expect(g.indexOf.get('n2')).toBe(2);
    expect(g.inputs[0]).toEqual([{ shape: [], dtype: 'float32', device: 'cpu' }]);
    expect(g.modules).toEqual([null, null, null, null]);
    expect(Array.from(g.pathPtr)).toEqual([0, 3, 6, 9]);
    // outgoing edges by source node
    expect(Array.from(g.outEdges.subarray(g.outPtr[0], g.outPtr[1]))).toEqual([0, 1]);
    expect(Array.from(g.outEdges.subarray(g.outPtr[1], g.outPtr[2]))).toEqual([2]);
    expect(g.outPtr[3] - g.outPtr[2]).toBe(0);
    expect(g.bounds).toEqual([0, 1, -2, 0]);
  });

  it('survives an empty or missing payload', () => {
    for (const raw of [null, undefined, {}, { nodes: {}, edges: {} }]) {
      const g = decodeGraph(raw);
      expect(g.n).toBe(0);
      expect(g.m).toBe(0);
      expect(g.bounds).toEqual([0, 0, 0, 0]);
    }
  });

  it('falls back to straight edges and computed midpoints and bounds', () => {
    const raw = zGraph({ binary: false });
    delete raw.edges.path_x;
    delete raw.edges.mid_x;
    delete raw.bounds;
    const g = decodeGraph(raw);
    expect(Array.from(g.pathPtr)).toEqual([0, 3, 6, 9]);
    expect(Array.from(g.pathX.subarray(0, 2))).toEqual([0.5, 0]);
    expect(g.midX[0]).toBeCloseTo(0.25);
    expect(g.bounds).toEqual([0, 1, -2, 0]);
  });

  it('clamps out-of-range edge endpoints', () => {
    const raw = zGraph({ binary: false });
    raw.edges.dst = [1, 99, -1];
    const g = decodeGraph(raw);
    expect(Array.from(g.dst)).toEqual([1, 0, 0]);
  });

  it('straightPaths separates every edge with NaN', () => {
    const p = straightPaths(new Float32Array([0, 1]), new Float32Array([0, -1]), new Int32Array([0]), new Int32Array([1]));
    expect(Array.from(p.pathX)).toEqual([0, 1, NaN]);
  });
});

describe('decodeState', () => {
  const g = decodeGraph(zGraph());

  it('decodes a mid-run state', () => {
    const s = decodeState(zState(3), g);
    expect(s.position).toBe(3);
    expect(s.total).toBe(4);
    expect(s.next).toBe(2);
    expect(s.last).toBe(1);
    expect(Array.from(s.nodeState)).toEqual([2, 2, 1, 2]);
    expect(Array.from(s.edgeNorm)).toEqual([1, 1, 4]);
    expect(Array.from(s.edgeFlag)).toEqual([1, 1, 1]);
    expect(s.edgeValues.get(2)).toEqual([4]);
    expect(s.normRange[0]).toBe(0);
    expect(s.normRange[1]).toBeCloseTo(Math.log10(4));
    expect(s.waiting).toEqual([{ slot: 0, shape: [], dtype: 'float32', norm: 1, values: [1] }]);
    expect(s.status).toBe('step 3 / 4 — next AccumulateGrad');
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

  it('reads errors, string non-finite values and ignores bad edge keys', () => {
    const raw = zState(1, { binary: false, error: { node: 3, message: 'boom' } });
    raw.edge_values = { 0: ['nan', 'inf'], 7: [1], x: [2] };
    raw.waiting = [null, { slot: 1, shape: [2], dtype: 'float64', norm: 'inf', values: null }];
    const s = decodeState(raw, g);
    expect(s.error).toEqual({ node: 3, message: 'boom', id: null });
    expect(s.edgeValues.get(0)).toEqual([NaN, Infinity]);
    expect([...s.edgeValues.keys()]).toEqual([0]);
    expect(s.waiting[0]).toBeNull();
    expect(s.waiting[1].norm).toBe(Infinity);
    expect(Array.from(s.nodeState)).toEqual([2, 0, 0, 3]);
  });
});
