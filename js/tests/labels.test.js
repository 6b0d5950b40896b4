// @ts-check
import { describe, expect, it } from 'vitest';
import { decodeGraph, decodeState } from '../src/model.js';
import {
  edgeLabel,
  edgeRows,
  nodeRows,
  replyRows,
  shapeText,
  summaryText,
  valuesText,
  waitingRows,
} from '../src/labels.js';
import { nonfinite, zGraph, zState } from './fixtures.js';

const g = decodeGraph(zGraph());

describe('edge labels', () => {
  it('reads 4 and 1 on the edges into x and y once they flowed', () => {
    const s = decodeState(zState(4), g);
    expect(edgeLabel(s, 2)).toBe('4'); // Pow -> x
    expect(edgeLabel(s, 1)).toBe('1'); // Add -> y
    expect(edgeLabel(decodeState(zState(0), g), 2)).toBe('');
  });
  it('formats several values and non-finite ones', () => {
    expect(valuesText([1, -0.5, NaN, Infinity])).toBe('[1, -0.5, NaN, inf]');
    expect(valuesText([])).toBe('');
    // log(x) at x = [0, 1] sends inf along edge 4, sqrt(x) * 0 NaN along edge 6.
    const ng = decodeGraph(nonfinite.graph());
    const s = decodeState(nonfinite.state(nonfinite.steps), ng);
    expect(edgeLabel(s, 4)).toBe('[inf, 1]');
    expect(edgeLabel(s, 6)).toBe('[NaN, 0]');
    const many = decodeState(zState(4, { edge_values: { 1: [1, 2, 3, 4, 5] } }), g);
    expect(edgeLabel(many, 1)).toBe(''); // too many values for a label
  });
});

describe('node labels and rows', () => {
  it('formats shapes (the drawing\'s leaf labels: drawing.test.js itemText)', () => {
    expect(shapeText([3, 4])).toBe('[3, 4]');
    expect(shapeText([])).toBe('[]');
  });
  it('lists kind, module and slots', () => {
    const rows = nodeRows(g, 0);
    expect(rows[0]).toEqual(['kind', 'function (root)']);
    expect(rows).toContainEqual(['slot 0', '[] float32 cpu']);
  });
  it('describes an edge before and after it flowed', () => {
    expect(edgeRows(g, decodeState(zState(0), g), 2)).toContainEqual(['state', 'not flowed yet']);
    const rows = edgeRows(g, decodeState(zState(4), g), 2);
    expect(rows[0]).toEqual(['from', 'PowBackward0 (output 0)']);
    expect(rows).toContainEqual(['‖g‖', '4']);
    expect(rows).toContainEqual(['values', '4']);
  });
  it('lists the waiting slots', () => {
    expect(waitingRows([{ slot: 0, shape: [3], dtype: 'float32', norm: 2, values: [1, 1, 1.41] }, null])).toEqual([
      ['slot 0', '[3] float32 · ‖g‖ 2 · = [1, 1, 1.41]'],
      ['slot 1', 'empty (no gradient)'],
    ]);
  });
});

describe('summaries and inspect replies', () => {
  it('summarises a tensor in one line', () => {
    const t = summaryText({ shape: [3], dtype: 'float32', norm: 2, min: -1, max: 'inf', mean: 0.5, nan: 0, inf: 1, values: [1, 2, 'inf'] });
    expect(t).toBe('[3] float32 · ‖g‖ 2 · min -1 max inf · mean 0.5 · ⚠ 1 inf · values [1, 2, inf]');
    expect(summaryText(null)).toBe('no gradient');
  });
  it('turns a node reply into rows, whatever fields it has', () => {
    const rows = replyRows({
      id: 'n1',
      name: 'PowBackward0',
      inputs: [[[], 'float32', 'cpu']],
      sequence_nr: 3,
      incoming: [{ shape: [], dtype: 'float32', norm: 1, values: [1] }, null],
      outgoing: { 'n1:0': { shape: [], dtype: 'float32', norm: 4 }, 'zz': null },
      error: null,
      extra: { a: 1 },
      listed: [{ slot: 2, name: 'q', summary: null }],
    }, g);
    expect(rows).toEqual([
      ['sequence nr', '3'],
      ['in 0', '[] float32 · ‖g‖ 1 · values 1'],
      ['in 1', 'empty'],
      ['out → x', '[] float32 · ‖g‖ 4'],
      ['out → zz', 'not flowed'],
      ['extra', '{"a":1}'],
      ['listed 2', '→ q no gradient'],
    ]);
    expect(replyRows(null)).toEqual([]);
  });
  it('leaves the inspector-only fields (formula, why it failed, the engine run) off the card', () => {
    const rows = replyRows({ id: 'n3', sequence_nr: null, formula: { known: true, latex: 'x' }, explanation: null, run: null, incoming: [null] }, g);
    expect(rows).toEqual([['in 0', 'empty']]);
  });
  it('turns an edge reply into a gradient row', () => {
    const rows = replyRows({ id: 'n1:0', src: { id: 'n1' }, dst: { id: 'n2' }, summary: null });
    expect(rows).toEqual([['grad', 'no gradient']]);
  });
});
