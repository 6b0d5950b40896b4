// Version 2 of the graph payload (string tables, index buffers, derived fields left out): what
// Python's `view.graph_payload` sends, decoded to the same Graph as version 1. The fixture holds
// payloads made by Python (buffers base64 as in a recording) with Python's own decoding of each
// (`view.decode_graph`, version 1's shape); regenerate it if the format changes.
import { describe, expect, it } from 'vitest';
import { bentPaths, decodeGraph, pathMiddles } from '../src/model.js';
import { decodeBuffers } from '../src/replay.js';
import { dataView } from './fixtures.js';
import FIXTURE from './payload_v2.json';

/** The payload as the live widget receives it: every buffer a DataView at an odd offset. */
function asWidget(raw) {
  const g = decodeBuffers(raw);
  for (const part of ['nodes', 'edges']) {
    for (const [k, v] of Object.entries(g[part])) if (ArrayBuffer.isView(v)) g[part][k] = dataView(v, 3);
  }
  return g;
}

const nums = (a) => Array.from(a, (v) => (Number.isNaN(v) ? null : v));

describe.each(Object.keys(FIXTURE))('version 2 payload "%s"', (name) => {
  const { raw, expect: want } = FIXTURE[name];
  it.each([
    ['DataViews', () => asWidget(raw)],
    ['typed arrays (a recording)', () => decodeBuffers(raw)],
  ])('decodes like Python from %s', (_, make) => {
    const g = decodeGraph(make());
    const n = want.nodes;
    const e = want.edges;
    expect(g.version).toBe(2);
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

describe('version 2 details', () => {
  it('covers boxes, contracted edges, bends and explicit ids', () => {
    const mlp = decodeGraph(decodeBuffers(FIXTURE.mlp.raw));
    expect(mlp.boxes.length).toBe(1);
    expect(mlp.ids[mlp.boxes[0]]).toBe('group:0');
    expect(FIXTURE.mlp.raw.edges.src_id.index.length).toBeGreaterThan(0);
    expect(mlp.pathPtr[mlp.m]).toBeGreaterThan(3 * mlp.m); // some edge bends
    expect(mlp.savedState.some((s) => s === 1)).toBe(true);
    expect(FIXTURE.renamed.raw.nodes.id[0]).toBe('node-0');
    expect(FIXTURE.z.raw.nodes.id).toBeUndefined();
    expect(FIXTURE.z.raw.edges.id).toBeUndefined();
  });

  it('reads index buffers of every width, and a missing table entry as the fallback', () => {
    const u16 = (a) => dataView(new Uint16Array(a), 1);
    const g = decodeGraph({
      version: 2,
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
});
