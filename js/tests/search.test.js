// @ts-check
import { beforeEach, describe, expect, it, vi } from 'vitest';
import { decodeGraph } from '../src/model.js';
import { SEARCH_DEBOUNCE_MS, createSearch, decodeMatches, matchWhere, moveActive } from '../src/search.js';
import { boxGraph } from './fixtures.js';

const g = decodeGraph(boxGraph());
const MATCHES = {
  matches: [
    { id: 'n7', name: 'AccumulateGrad', label: '1.1.weight', module: '1.1', leaf_name: '1.1.weight', item: 2 },
    { id: 'n0', name: 'NllLossBackward0', label: 'NllLoss', module: null, leaf_name: null, item: 0 },
    { id: 'n5', name: 'TBackward0', label: 'T', module: '1.1', leaf_name: null, item: -1 },
  ],
};

beforeEach(() => {
  document.body.innerHTML = '';
  vi.useRealTimers();
});

describe('pure helpers', () => {
  it('decodes matches and says where each one is', () => {
    const m = decodeMatches(MATCHES);
    expect(m).toHaveLength(3);
    expect(matchWhere(m[0], g)).toBe('in folded 1.1');
    expect(matchWhere(m[1], g)).toBe('');
    expect(matchWhere(m[2], g)).toBe('hidden (plumbing)');
    expect(decodeMatches({ matches: [{ name: 'no id' }, null] })).toEqual([]);
    expect(decodeMatches(null)).toEqual([]);
  });
  it('moves the active option with wrap-around', () => {
    expect(moveActive(-1, 'ArrowDown', 3)).toBe(0);
    expect(moveActive(2, 'ArrowDown', 3)).toBe(0);
    expect(moveActive(0, 'ArrowUp', 3)).toBe(2);
    expect(moveActive(1, 'End', 3)).toBe(2);
    expect(moveActive(1, 'ArrowDown', 0)).toBe(-1);
  });
});

describe('the search box', () => {
  function mount(reply = MATCHES) {
    vi.useFakeTimers();
    const request = vi.fn(() => Promise.resolve(reply));
    const choose = vi.fn();
    const s = createSearch(document, { request, choose, graph: () => g });
    document.body.append(s.el);
    const type = (text) => {
      s.input.value = text;
      s.input.dispatchEvent(new Event('input'));
    };
    const key = (k) => s.input.dispatchEvent(new KeyboardEvent('keydown', { key: k, bubbles: true, cancelable: true }));
    return { s, request, choose, type, key };
  }

  it('is a labelled combobox that asks the kernel once typing pauses', async () => {
    const { s, request, type } = mount();
    expect(s.input.getAttribute('role')).toBe('combobox');
    expect(s.input.getAttribute('aria-label')).toBe('Search nodes');
    type('1.w');
    type('1.we');
    expect(request).not.toHaveBeenCalled();
    vi.advanceTimersByTime(SEARCH_DEBOUNCE_MS);
    expect(request).toHaveBeenCalledTimes(1);
    expect(request).toHaveBeenCalledWith('1.we');
    await vi.runAllTimersAsync();
    expect(s.list.hidden).toBe(false);
    expect(s.input.getAttribute('aria-expanded')).toBe('true');
    const options = [...s.list.querySelectorAll('[role=option]')];
    expect(options).toHaveLength(3);
    expect(options[0].textContent).toContain('1.weight');
    expect(options[0].textContent).toContain('in folded 1');
    expect(options[0].getAttribute('aria-selected')).toBe('true');
    expect(s.input.getAttribute('aria-activedescendant')).toBe(options[0].id);
  });

  it('arrows move, Enter chooses, Escape closes', async () => {
    const { s, choose, type, key } = mount();
    type('x');
    await vi.runAllTimersAsync();
    key('ArrowDown');
    expect(s.list.querySelectorAll('[aria-selected=true]')[0].dataset.id).toBe('n0');
    key('Enter');
    expect(choose).toHaveBeenCalledWith(expect.objectContaining({ id: 'n0' }));
    expect(s.list.hidden).toBe(true);
    type('y');
    await vi.runAllTimersAsync();
    key('Escape');
    expect(s.list.hidden).toBe(true);
  });

  it('a click on an option chooses it', async () => {
    const { s, choose, type } = mount();
    type('x');
    await vi.runAllTimersAsync();
    s.list.querySelectorAll('[role=option]')[2].click();
    expect(choose).toHaveBeenCalledWith(expect.objectContaining({ id: 'n5', item: -1 }));
  });

  it('Enter right after typing searches at once and takes the best match', async () => {
    const { request, choose, type, key } = mount();
    type('1.weight');
    key('Enter');
    expect(request).toHaveBeenCalledWith('1.weight');
    await vi.runAllTimersAsync();
    expect(choose).toHaveBeenCalledWith(expect.objectContaining({ id: 'n7' }));
  });

  it('says when nothing matches, and drops replies to older queries', async () => {
    vi.useFakeTimers();
    const resolvers = [];
    const request = vi.fn(() => new Promise((r) => resolvers.push(r)));
    const s = createSearch(document, { request, choose: vi.fn(), graph: () => g });
    s.input.value = 'a';
    s.input.dispatchEvent(new Event('input'));
    vi.advanceTimersByTime(SEARCH_DEBOUNCE_MS);
    s.input.value = 'ab';
    s.input.dispatchEvent(new Event('input'));
    vi.advanceTimersByTime(SEARCH_DEBOUNCE_MS);
    resolvers[1]({ matches: [] });
    resolvers[0](MATCHES); // late answer to "a": ignored
    await vi.runAllTimersAsync();
    expect(s.list.textContent).toContain('No node matches “ab”');
    expect(s.list.querySelectorAll('[role=option]')).toHaveLength(0);
  });
});
