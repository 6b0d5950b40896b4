// @ts-check
import { describe, expect, it } from 'vitest';
import { decodeGraph } from '../src/model.js';
import {
  communicationText,
  decodeInspectReply,
  hookItems,
  incomingSlots,
  isNonfinite,
  layoutText,
  outgoingEdges,
  savedDetailRows,
  savedItems,
  sequenceText,
  summaryStats,
  tracebackText,
  valueText,
  valuesPreview,
} from '../src/inspect.js';
import { addmmReply, boxGraph, freed, nonfinite, plumbing, z } from './fixtures.js';

describe('tensor summaries', () => {
  it('flags NaN and inf, as counts or as a non-finite norm', () => {
    expect(isNonfinite({ nan: 1, inf: 0 })).toBe(true);
    expect(isNonfinite({ nan: 0, inf: 0, norm: 'inf' })).toBe(true);
    expect(isNonfinite({ nan: 0, inf: 0, norm: 2 })).toBe(false);
    // Python's replies: log(x) at x = [0, 1] sends [inf, 1] (edge 4), sqrt's [NaN, 0] (edge 6).
    expect(isNonfinite(nonfinite.edge(4).summary)).toBe(true);
    expect(isNonfinite(nonfinite.edge(6).summary)).toBe(true);
    expect(isNonfinite(nonfinite.edge(0).summary)).toBe(false);
    expect(isNonfinite(null)).toBe(false);
  });
  it('lists the statistics, alarms on non-finite ones', () => {
    const s = nonfinite.edge(4).summary; // norm, max, mean "inf", std "nan"
    const rows = summaryStats(s);
    expect(rows[0]).toEqual(['tensor', '[2] float32 (2 values)', false]);
    expect(rows.find((r) => r[0] === 'max')).toEqual(['max', 'inf', true]);
    expect(rows.find((r) => r[0] === 'min')).toEqual(['min', '1', false]);
    expect(rows.find((r) => r[0] === 'std')).toEqual(['std', 'NaN', false]);
    expect(rows.at(-1)).toEqual(['NaN / inf', '0 / 1', true]);
    // A Summary of one element has no std: Python sends null, and the row is left out.
    expect(z.edge(0).summary.std).toBeNull();
    expect(summaryStats(z.edge(0).summary).map((r) => r[0])).toEqual(['tensor', '‖·‖', 'min', 'max', 'mean', 'NaN / inf']);
  });
  it("says a DTensor's numbers are its local shard's (Summary.shard), right under the tensor row", () => {
    const shard = 'local shard [4, 16] of a DTensor [4, 32], S(1) on mesh (2,) cpu';
    const rows = summaryStats({ ...z.edge(0).summary, shape: [4, 16], numel: 64, shard });
    expect(rows[1]).toEqual(['DTensor', shard, false]);
    expect(summaryStats(z.edge(0).summary).some((r) => r[0] === 'DTensor')).toBe(false);
  });
  it("says a DTensor layout and what a communication node moves (Python's core/dtensor.py)", () => {
    const lay = (/** @type {string[]} */ p, /** @type {number[] | null} */ local) => ({ global_shape: [32, 16], local_shape: local, placements: p, mesh_shape: [2], mesh_dim_names: null, device_type: 'cpu', text: `${p.join(', ')} on mesh (2,) cpu` });
    expect(layoutText(lay(['S(0)'], [16, 16]))).toBe('S(0) on mesh (2,) cpu · local [16, 16] of [32, 16]');
    expect(layoutText(lay(['R'], null))).toBe('R on mesh (2,) cpu');
    expect(layoutText(null)).toBe('');
    const comm = { op: 'redistribute', forward_from: lay(['P(sum)'], null), forward_to: null, grad_to: lay(['R'], null), note: '…' };
    expect(communicationText(comm)).toBe('redistribute · forward from P(sum) on mesh (2,) cpu · gradient back as R on mesh (2,) cpu');
    expect(communicationText(undefined)).toBe('');
  });
  it('previews values with a note on how many are shown', () => {
    expect(valuesPreview([1, 2], 2)).toEqual({ text: '[1, 2]', note: '2 values', alarm: false });
    const long = valuesPreview(Array.from({ length: 40 }, (_, i) => i), 40, 4);
    expect(long.text).toBe('[0, 1, 2, 3, …]');
    expect(long.note).toBe('first 4 of 40');
    expect(valuesPreview(['nan', 1]).alarm).toBe(true);
    expect(valuesPreview(nonfinite.edge(4).summary.values)).toEqual({ text: '[inf, 1]', note: '2 values', alarm: true });
    expect(valuesPreview([[1, -2], [0, 0.5]])).toEqual({ text: '[1-2j, 0+0.5j]', note: '2 values', alarm: false }); // complex
    expect(valuesPreview(null).text).toBe('');
  });
});

describe('saved values', () => {
  const items = savedItems(addmmReply().saved);
  it('normalises every saved value with its state', () => {
    expect(items.map((i) => [i.name, i.state])).toEqual([
      ['alpha', 'ok'], ['mat1', 'ok'], ['mat2', 'stale'], ['self', 'freed'], ['other', 'packed'], ['ignore_index', 'ok'], ['mat1_sym_sizes', 'ok'],
    ]);
    const mat1 = items[1];
    expect(mat1).toMatchObject({ tensor: true, shape: '[5, 8]', dtype: 'float32', size: '160 B', aliases: ['n1.result (LogSoftmaxBackward0)'], aliasIds: ['n1'] });
    expect(items[0].value).toBe('1');
    expect(items[5].value).toBe('-100');
    expect(items[6].value).toBe('[5, 8]');
    expect(items[4].value).toBe("'offloaded'"); // what the pack hook returned
    expect(items[2].note).toMatch(/stale/);
  });
  it('an unknown state (a torch that cannot read it) keeps its badge and its one-line note', () => {
    const note = 'unknown on torch 2.6.0: whether it is packed, its shape and what it holds (...); torch >= 2.13 reads it without unpacking';
    const [u, odd] = savedItems([{ name: 'result', kind: 'tensor', state: 'unknown', note }, { name: 'x', kind: 'tensor', state: 'new?' }]);
    expect([u.state, u.note, u.shape, u.size]).toEqual(['unknown', note, '', '']);
    expect(odd.state).toBe('unknown'); // a state this front-end does not know is never shown as ok
    expect(savedDetailRows(u)[0]).toEqual(['state', 'unknown', true]);
  });
  it('detail rows: versions of a stale tensor, stride, statistics', () => {
    const stale = savedDetailRows(items[2]);
    expect(stale[0]).toEqual(['state', 'stale', true]);
    expect(stale[1]).toEqual(['version', 'saved at 0, now 1', true]);
    const ok = savedDetailRows(items[1]);
    expect(ok.map((r) => r[0])).toEqual(['state', 'shape', 'dtype', 'device', 'stride', 'bytes', '‖·‖', 'min', 'max', 'mean', 'std', 'NaN / inf']);
    expect(ok.find((r) => r[0] === 'stride')[1]).toBe('[8, 1]');
  });
  it('reads the saved values Python sends: ok, freed, stale with its versions', () => {
    expect(Object.keys(addmmReply()).sort()).toEqual(Object.keys(z.node(0)).sort()); // the hand-made reply has Python's fields
    const pow = savedItems(freed.node(1).saved); // after z.backward()
    expect(pow.map((i) => [i.name, i.state])).toEqual([['exponent', 'ok'], ['self', 'freed']]);
    expect(pow[0].value).toBe('2');
    expect(pow[1].note).toMatch(/freed/);
    const tanh = savedItems(plumbing.node(9).saved); // its result modified in place
    expect(tanh.map((i) => [i.name, i.state])).toEqual([['result', 'stale']]);
    expect(savedDetailRows(tanh[0])[1]).toEqual(['version', 'saved at 0, now 1', true]);
    const ok = savedItems(z.node(1).saved); // Pow at position 2: x and the exponent
    expect(ok.map((i) => [i.name, i.state, i.tensor])).toEqual([['exponent', 'ok', false], ['self', 'ok', true]]);
    expect(valuesPreview(z.node(1).saved[1].value).text).toBe('[2]');
  });
  it('tolerates junk and duplicate names', () => {
    expect(savedItems(null)).toEqual([]);
    const d = savedItems([{ name: 'x', kind: 'tensor' }, { name: 'x', kind: 'none' }, null]);
    expect(d.map((i) => i.key)).toEqual(['x', 'x#1']);
    expect(d[1].value).toBe('None');
    expect(valueText(true)).toBe('True');
    expect(valueText({ a: 1 })).toBe('{"a":1}');
  });
});

describe('decodeInspectReply', () => {
  it('reads a JSON object as the reply, anything else as no reply', () => {
    const r = addmmReply();
    expect(decodeInspectReply(r)).toBe(r); // the object itself: unknown fields stay (replyRows lists them)
    for (const v of [null, undefined, 'n1', 3, [r]]) expect(decodeInspectReply(v)).toBeNull();
  });
});

describe('node reply helpers', () => {
  it('hooks and notes', () => {
    const h = hookItems(addmmReply().hooks);
    expect(h.hooks).toEqual([{ on: '2.weight', kind: 'tensor hook', fn: 'scale_grad' }]);
    expect(h.notes[0]).toMatch(/cannot be listed/);
  });
  it('incoming slots with input metadata, outgoing edges by target name', () => {
    const r = addmmReply();
    const slots = incomingSlots(r);
    expect(slots).toHaveLength(1);
    expect(slots[0].meta).toBe('[5, 8] float32 cpu');
    expect(slots[0].summary.nan).toBe(1);
    const g = decodeGraph(boxGraph());
    const outs = outgoingEdges({ outgoing: { 'n1:0': null, 'zz:0': {} } }, g);
    expect(outs[0]).toEqual({ id: 'n1:0', to: '1.1', summary: null });
    expect(outs[1].to).toBe('zz:0');
  });
  it('traceback text and sequence numbers', () => {
    expect(tracebackText(addmmReply().traceback)).toBe('  File "<stdin>", line 3, in <module>\n    out = model(x)');
    expect(tracebackText(null)).toBe('');
    expect(sequenceText(4)).toBe('4');
    expect(sequenceText(18446744073709552000)).toMatch(/UINT64_MAX/);
  });
});
