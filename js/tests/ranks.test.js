// @ts-check
// The rank selector of aw.explore(group) (ranks.js): decoding the `ranks` trait, the labelled
// <select> following the `rank` trait, a pick sent as `select_rank` (the control stays on the rank
// Python shows until it answers), the live widget's bar only for a rank group, and the standalone
// page swapping each carried rank's walkthrough in, the ones it lacks disabled and explained.
import { beforeEach, describe, expect, it } from 'vitest';
import widget from '../src/index.js';
import { MSG, TRAIT } from '../src/protocol.js';
import { createLiveRankBar, createRankBar, decodeRanks, mountWalkthroughRanks } from '../src/ranks.js';
import { FakeModel, z } from './fixtures.js';

const LINES = [
  { rank: 0, label: 'rank 0: NaN/Inf received through a collective (non-finite from step 3)', detail: 'rank 0: received it through a collective ...', role: 'received' },
  { rank: 1, label: 'rank 1: NaN/Inf born at step 2 in SqrtBackward0', detail: 'rank 1: born at step 2 in its own graph ... sqrt at 0 is infinite', role: 'born' },
];

beforeEach(() => {
  document.body.innerHTML = '';
  window.requestAnimationFrame = undefined;
});

describe('decodeRanks', () => {
  it('keeps well-formed lines and drops the rest', () => {
    expect(decodeRanks(null)).toEqual([]);
    expect(decodeRanks([{ rank: 2 }, { rank: -1 }, { rank: '1' }, null])).toEqual([{ rank: 2, label: 'rank 2', detail: '', role: '', strip: null }]);
    const [l] = decodeRanks([{ rank: 0, strip: { n_steps: 3, values: [1, 'x', null], alarm: [2, 'y'], range: [0, 'z'] } }]);
    expect(l.strip).toEqual({ nSteps: 3, values: [1, null, null], alarm: [2], range: [0, 1] });
    expect(decodeRanks(LINES).map((l) => l.role)).toEqual(['received', 'born']);
  });
});

describe('the rank bar', () => {
  it('is a labelled select described by the shown rank, a pick sent and shown once Python answers', () => {
    const model = new FakeModel({ [TRAIT.RANKS]: LINES, [TRAIT.RANK]: 1 });
    const picked = [];
    const bar = createRankBar(document, { model, choose: (r) => picked.push(r) });
    document.body.append(bar.el);
    const select = bar.select;
    expect(select.labels[0].textContent).toBe('Rank');
    expect(bar.el.querySelector('.agw-rank-count').textContent).toBe('of 2 ranks');
    expect([...select.options].map((o) => o.textContent)).toEqual(LINES.map((l) => l.label));
    expect(select.value).toBe('1');
    const detail = document.getElementById(select.getAttribute('aria-describedby'));
    expect(detail.textContent).toContain('sqrt at 0');
    expect(bar.el.classList.contains('agw-rank-culprit')).toBe(true);
    select.value = '0';
    select.dispatchEvent(new Event('change'));
    expect(picked).toEqual([0]);
    expect(select.value).toBe('1'); // still the rank Python shows
    model.push(TRAIT.RANK, 0); // Python answers
    expect(select.value).toBe('0');
    expect(detail.textContent).toContain('through a collective');
    expect(bar.el.classList.contains('agw-rank-culprit')).toBe(false);
    select.dispatchEvent(new Event('change')); // the rank shown already: nothing sent
    expect(picked).toEqual([0]);
    bar.destroy();
    model.push(TRAIT.RANK, 1);
    expect(select.value).toBe('0'); // no longer listening
  });

  it("keeps the keys it uses from the host page's shortcuts (JupyterLab's command mode)", () => {
    const bar = createRankBar(document, { model: new FakeModel({ [TRAIT.RANKS]: LINES, [TRAIT.RANK]: 1 }), choose: () => {} });
    document.body.append(bar.el);
    const seen = [];
    document.body.addEventListener('keydown', (ev) => seen.push(ev.key));
    for (const key of ['ArrowUp', 'ArrowDown', 'Home', 'a', 'Tab', 'Escape']) {
      bar.select.dispatchEvent(new KeyboardEvent('keydown', { key, bubbles: true }));
    }
    bar.select.dispatchEvent(new KeyboardEvent('keydown', { key: 'Enter', shiftKey: false, ctrlKey: true, bubbles: true }));
    expect(seen).toEqual(['Tab', 'Escape', 'Enter']);
  });

  it("a watch group's ranks each get their row of the timeline: a click shows that rank", () => {
    const strip = (alarm) => ({ n_steps: 4, values: [0.1, 0.2, null, null], alarm, range: [0.1, 0.2] });
    const lines = [{ ...LINES[0], strip: strip([3]) }, { ...LINES[1], strip: strip([2, 3]) }];
    const picked = [];
    const model = new FakeModel({ [TRAIT.RANKS]: lines, [TRAIT.RANK]: 1 });
    const bar = createRankBar(document, { model, choose: (r) => picked.push(r) });
    document.body.append(bar.el);
    const rows = [...bar.el.querySelectorAll('button.agw-rank-strip')];
    expect(rows.map((b) => b.getAttribute('aria-label'))).toEqual(lines.map((l) => l.label));
    expect(rows.map((b) => b.getAttribute('aria-pressed'))).toEqual(['false', 'true']);
    expect(rows.map((b) => b.querySelector('canvas').dataset.painted)).toEqual(['4', '4']);
    expect(bar.el.querySelector('.agw-rank-strip-caption').textContent).toContain('steps 0 … 3');
    rows[0].click();
    expect(picked).toEqual([0]);
    model.push(TRAIT.RANK, 0);
    expect(rows.map((b) => b.getAttribute('aria-pressed'))).toEqual(['true', 'false']);
    expect(bar.select.value).toBe('0');
    // a recording group has no strips
    const plain = createRankBar(document, { model: new FakeModel({ [TRAIT.RANKS]: LINES, [TRAIT.RANK]: 0 }), choose: () => {} });
    expect(plain.el.querySelector('.agw-rank-strips').hidden).toBe(true);
  });

  it('live: the bar exists only for a rank group and sends select_rank', () => {
    expect(createLiveRankBar(document, new FakeModel({ [TRAIT.RANKS]: [] }), () => {})).toBeNull();
    const sent = [];
    const bar = createLiveRankBar(document, new FakeModel({ [TRAIT.RANKS]: LINES, [TRAIT.RANK]: 1 }), (m) => sent.push(m));
    bar.select.value = '0';
    bar.select.dispatchEvent(new Event('change'));
    expect(sent).toEqual([{ type: MSG.SELECT_RANK, rank: 0 }]);
  });

  it('the widget shows the bar above the view for a rank group, and sends the pick to the kernel', () => {
    const model = new FakeModel({ [TRAIT.GRAPH]: z.graph(), [TRAIT.STATE]: z.state(0), [TRAIT.RANKS]: LINES, [TRAIT.RANK]: 1 });
    const el = document.createElement('div');
    document.body.append(el);
    const cleanup = widget.render({ model, el });
    expect(el.firstElementChild.classList.contains('agw-ranks')).toBe(true);
    const select = /** @type {HTMLSelectElement} */ (el.querySelector('.agw-rank-select'));
    select.value = '0';
    select.dispatchEvent(new Event('change'));
    expect(model.sent.at(-1)).toEqual({ type: MSG.SELECT_RANK, rank: 0 });
    cleanup();
    const plain = document.createElement('div');
    widget.render({ model: new FakeModel({ [TRAIT.GRAPH]: z.graph(), [TRAIT.STATE]: z.state(0) }), el: plain });
    expect(plain.querySelector('.agw-ranks')).toBeNull();
  });
});

describe('the rank group page', () => {
  /** A page of 3 ranks carrying 0 and 1 (rank 1 opening), each rank's walkthrough z's, retitled. */
  function page() {
    const walk = z.walkthrough();
    walk.title = 'rank 1';
    const other = z.walkthrough();
    other.title = 'rank 0';
    const lines = [...LINES, { rank: 2, label: 'rank 2: gradients finite', detail: '', role: 'finite' }];
    return Object.assign(walk, { ranks: { lines, selected: 1, pattern: 'run_{rank}.awwatch', world: 3, carried: [0, 1], walks: { 0: other }, kind: 'watch' } });
  }

  it('swaps the carried ranks in and says how to see the others', () => {
    const el = document.createElement('main');
    document.body.append(el);
    const cleanup = mountWalkthroughRanks(el, page());
    const select = /** @type {HTMLSelectElement} */ (el.querySelector('.agw-rank-select'));
    expect(select.value).toBe('1');
    expect(document.title).toBe('rank 1');
    expect(el.querySelectorAll('.agw-root').length).toBe(1);
    const opts = [...select.options];
    expect(opts.map((o) => o.disabled)).toEqual([false, false, true]);
    expect(opts[2].textContent).toContain('(not in this page)');
    expect(el.querySelector('.agw-rank-count').textContent).toBe('of 3 ranks');
    expect(el.querySelector('.agw-rank-note').textContent).toContain("aw.explore(aw.load_watch('run_{rank}.awwatch'))");
    select.value = '0';
    select.dispatchEvent(new Event('change'));
    expect(select.value).toBe('0');
    expect(document.title).toBe('rank 0');
    expect(el.querySelectorAll('.agw-root').length).toBe(1); // the other rank's view replaced it
    expect(el.querySelector('.agw-rank-detail').textContent).toContain('through a collective');
    cleanup();
  });
});
