// @ts-check
// Issue 37: the graph payload carries what the run can do (`capabilities`), and the front-end
// reads them, never the run's kind (`source`): capabilities.js decodes them with the graph (deriving them once, from
// `source`, for a payload saved before they were sent); the colour modes and the inspector's
// what-if edits follow them.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';

import { decodeCapabilities } from '../src/capabilities.js';
import { decodeGraph } from '../src/model.js';
import { CAPABILITIES } from '../src/protocol.js';
import { zGraph, zState } from './fixtures.js';
import { flush, mountView } from './mount.js';

const ALL = { live: true, edit: true, probe: true, compare: true, grad_of_tensor: true, saved_values: true };
const NONE = { live: false, edit: false, probe: false, compare: false, grad_of_tensor: false, saved_values: false };
const EDGE_REPLY = { id: 'n1:0', src: { id: 'n1', name: 'PowBackward0', output_nr: 0 }, dst: { id: 'n2', name: 'AccumulateGrad', label: 'x', input_nr: 0 }, summary: { numel: 1, norm: 4, values: [4] } };

describe('decodeCapabilities', () => {
  it('reads the six wire keys, whatever the source says', () => {
    expect(CAPABILITIES).toEqual(Object.keys(ALL));
    expect(decodeCapabilities({ ...NONE, saved_values: true }, 'live')).toEqual({ live: false, edit: false, probe: false, compare: false, gradOfTensor: false, savedValues: true });
    expect(decodeCapabilities({ ...ALL, edit: false }, 'recording')).toEqual({ live: true, edit: false, probe: true, compare: true, gradOfTensor: true, savedValues: true });
  });

  it('derives them from source for a payload without them (an older page), key by key for a partial one', () => {
    expect(Object.values(decodeCapabilities(undefined, 'recording'))).toEqual([false, false, false, false, false, false]);
    expect(Object.values(decodeCapabilities(undefined, 'live'))).toEqual([true, true, true, true, true, true]);
    expect(Object.values(decodeCapabilities(null, undefined))).toEqual([true, true, true, true, true, true]);
    expect(decodeCapabilities({ probe: false }, 'live')).toMatchObject({ probe: false, edit: true, savedValues: true });
    expect(decodeCapabilities({ edit: 'yes', probe: 1 }, 'live')).toMatchObject({ edit: false, probe: false });
  });

  it('decodeGraph carries them next to the source', () => {
    const g = decodeGraph({ ...zGraph(), source: 'live', capabilities: { ...ALL, probe: false } });
    expect(g.source).toBe('live');
    expect(g.capabilities.probe).toBe(false);
    expect(g.capabilities.edit).toBe(true);
    expect(decodeGraph({ ...zGraph(), source: 'recording', capabilities: undefined }).capabilities.savedValues).toBe(false);
  });
});

describe('the view offers what the capabilities say', () => {
  beforeEach(() => {
    document.body.innerHTML = '';
    // the view paints at once without it
    window.requestAnimationFrame = undefined;
  });
  afterEach(() => vi.useRealTimers());

  /** The colour modes offered (not hidden), and whether the select shows. @param {HTMLElement} el */
  const modes = (el) => {
    const select = /** @type {HTMLSelectElement} */ (el.querySelector('select[aria-label="Colour mode"]'));
    return { shown: !select.hidden, offered: [...select.options].filter((o) => !o.hidden).map((o) => o.value) };
  };

  /** The what-if buttons of the edge inspector for edge n1:0. @param {Record<string, unknown>} graph */
  async function whatIf(graph) {
    const m = mountView({ _graph: graph, _state: zState(3), selected_edge: null });
    await flush();
    m.model.set('selected_edge', 'n1:0');
    m.reply('inspect', EDGE_REPLY);
    await flush();
    const names = [...m.inspector().querySelectorAll('button')].map((b) => b.textContent);
    m.cleanup();
    return names.includes('Zero this gradient');
  }

  it('a live source whose capabilities rule out probes and saved values: gradient colours only', () => {
    const { el, cleanup } = mountView({ _graph: { ...zGraph(), source: 'live', capabilities: { ...ALL, probe: false, saved_values: false } }, _state: zState(0), selected_edge: null });
    expect(modes(el)).toEqual({ shown: false, offered: ['gradient'] });
    cleanup();
  });

  it('a recording whose capabilities allow them: memory and sensitivity are offered', () => {
    const { el, cleanup } = mountView({ _graph: { ...zGraph(), source: 'recording', capabilities: ALL }, _state: zState(0), selected_edge: null });
    expect(modes(el)).toEqual({ shown: true, offered: ['gradient', 'memory', 'sensitivity'] });
    cleanup();
  });

  it('probe alone offers sensitivity alone', () => {
    const { el, cleanup } = mountView({ _graph: { ...zGraph(), capabilities: { ...NONE, probe: true } }, _state: zState(0), selected_edge: null });
    expect(modes(el)).toEqual({ shown: true, offered: ['gradient', 'sensitivity'] });
    cleanup();
  });

  it("the edge inspector's what-if edits follow `edit`, not the source", async () => {
    expect(await whatIf({ ...zGraph(), source: 'live', capabilities: { ...ALL, edit: false } })).toBe(false);
    expect(await whatIf({ ...zGraph(), source: 'recording', capabilities: { ...NONE, edit: true } })).toBe(true);
    expect(await whatIf({ ...zGraph(), source: 'live' })).toBe(true); // no capabilities: derived
  });
});
