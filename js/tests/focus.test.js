// @vitest-environment node
// @ts-check
// What the view focuses and rings (focus.js): pure functions of the graph and the selection
// traits, on the real payloads of z = x**2 + y and of the folded classifier (fixtures.js).
import { describe, expect, it } from 'vitest';
import {
  focusFromTraits, focusItem, focusKey, focusOnSelected, focusOnSelectedEdge, hiddenText, highlightItems, inspectTarget, selectedItems, traitId,
} from '../src/focus.js';
import { decodeGraph } from '../src/model.js';
import { boxGraph, zGraph } from './fixtures.js';

/** @typedef {import('../src/focus.js').Focus} Focus */

const z = decodeGraph(zGraph()); // n0 Add -> n1 Pow (edge n0:0), n0 -> n2 y (n0:1), n1 -> n3 x (n1:0)
const boxes = decodeGraph(boxGraph()); // n0, n1, then boxes "1.1", "1.0", "0"
const none = new Map();

describe('focus', () => {
  it('traitId: an unset trait is null, a set one its string', () => {
    expect(traitId(undefined)).toBeNull();
    expect(traitId(null)).toBeNull();
    expect(traitId('n3')).toBe('n3');
  });

  it('focusKey: one stable key per target, "" for none', () => {
    expect(focusKey(null)).toBe('');
    expect(focusKey({ kind: 'node', id: 'n1' })).toBe('node:n1');
    expect(focusKey({ kind: 'edge', id: 'n0:1' })).toBe('edge:n0:1');
    expect(focusKey({ kind: 'box', path: '1.1' })).toBe('box:1.1');
  });

  it('selectedItems: the selected node, the focused box, the box hiding a node whose module is known', () => {
    expect(selectedItems(z, null, 'n1', 'n1:0', none)).toEqual({ selected: 1, selectedEdge: 2 });
    expect(selectedItems(z, null, null, null, none)).toEqual({ selected: -1, selectedEdge: -1 });
    expect(selectedItems(z, null, 'nope', 'nope:0', none)).toEqual({ selected: -1, selectedEdge: -1 });
    const box = boxes.indexOf.get('group:1.1');
    expect(selectedItems(boxes, { kind: 'box', path: '1.1' }, 'n0', null, none).selected).toBe(box);
    // n2 is inside module 1.1 (folded): ringed through its box once its module is known
    expect(selectedItems(boxes, null, 'n2', null, none).selected).toBe(-1);
    expect(selectedItems(boxes, null, 'n2', null, new Map([['n2', '1.1']])).selected).toBe(box);
  });

  it('highlightItems: shown ids as themselves, hidden ones through their box, unknown ones left out', () => {
    const box = boxes.indexOf.get('group:1.0');
    expect(highlightItems(boxes, ['n0', 'n7', 'gone'], new Map([['n7', '1.0']]))).toEqual([0, box]);
  });

  it('focusFromTraits: the edge before the node, none when neither is set', () => {
    expect(focusFromTraits('n1', 'n0:0')).toEqual({ kind: 'edge', id: 'n0:0' });
    expect(focusFromTraits('n1', null)).toEqual({ kind: 'node', id: 'n1' });
    expect(focusFromTraits(null, null)).toBeNull();
  });

  it('focusOnSelected: follows the node, keeps an edge selected with its target, keeps itself when unchanged', () => {
    /** @type {Focus} */
    const node = { kind: 'node', id: 'n1' };
    expect(focusOnSelected(node, z, 'n1', null)).toBe(node);
    expect(focusOnSelected(node, z, 'n2', null)).toEqual({ kind: 'node', id: 'n2' });
    // First NaN/Inf selects the edge n0:0 and its target n1 together: the edge stays in focus
    /** @type {Focus} */
    const edge = { kind: 'edge', id: 'n0:0' };
    expect(focusOnSelected(edge, z, 'n1', 'n0:0')).toBe(edge);
    expect(focusOnSelected(edge, z, 'n3', 'n0:0')).toEqual({ kind: 'node', id: 'n3' });
    // cleared: a node focus falls back to the selected edge, or to nothing
    expect(focusOnSelected(node, z, null, 'n1:0')).toEqual({ kind: 'edge', id: 'n1:0' });
    expect(focusOnSelected(node, z, null, null)).toBeNull();
    /** @type {Focus} */
    const box = { kind: 'box', path: '1.1' };
    expect(focusOnSelected(box, boxes, null, null)).toBe(box);
  });

  it('focusOnSelectedEdge: follows the edge; cleared, an edge focus falls back to the node', () => {
    /** @type {Focus} */
    const edge = { kind: 'edge', id: 'n0:0' };
    expect(focusOnSelectedEdge(edge, null, 'n0:0')).toBe(edge);
    expect(focusOnSelectedEdge(null, null, 'n1:0')).toEqual({ kind: 'edge', id: 'n1:0' });
    expect(focusOnSelectedEdge(edge, 'n1', null)).toEqual({ kind: 'node', id: 'n1' });
    expect(focusOnSelectedEdge(edge, null, null)).toBeNull();
    /** @type {Focus} */
    const node = { kind: 'node', id: 'n1' };
    expect(focusOnSelectedEdge(node, 'n1', null)).toBe(node);
  });

  it('focusItem and inspectTarget: what is shown, and what to ask the kernel', () => {
    expect(focusItem(z, null)).toBe(-1);
    expect(focusItem(z, { kind: 'node', id: 'n3' })).toBe(3);
    expect(focusItem(z, { kind: 'edge', id: 'n0:1' })).toBe(1);
    expect(inspectTarget(z, { kind: 'node', id: 'hidden' })).toEqual({ id: 'hidden' }); // by id: Python finds it
    expect(inspectTarget(z, { kind: 'edge', id: 'n0:1' })).toEqual({ edge: 1 });
    expect(inspectTarget(z, { kind: 'edge', id: 'gone:0' })).toBeNull();
    const box = boxes.indexOf.get('group:0');
    expect(inspectTarget(boxes, { kind: 'box', path: '0' })).toEqual({ node: box });
    expect(inspectTarget(boxes, { kind: 'box', path: 'unfolded' })).toBeNull();
    expect(hiddenText({ kind: 'edge', id: 'gone:0' })).toMatch(/not shown/);
    expect(hiddenText({ kind: 'box', path: 'x' })).toMatch(/not folded any more/);
  });
});
