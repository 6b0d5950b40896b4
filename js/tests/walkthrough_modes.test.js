// @ts-check
// The standalone page's offline modes: the walked replies answered by the walkthrough backend
// exactly as Python walked them, and the view offering only what the walkthrough answers.
import { describe, expect, it } from 'vitest';
import { tidySeparators } from '../src/chrome.js';
import { WALKTHROUGH_FORMAT } from '../src/protocol.js';
import { Player, mountWalkthrough, walkthroughBackend, walkthroughModel, walkthroughNonfinite } from '../src/walkthrough.js';
import { broken, nonfinite, z } from './fixtures.js';
import { clickItem, flush, mountView, useViewTestHooks } from './mount.js';

useViewTestHooks();

/** @typedef {Record<string, any>} Reply a walked reply as the assertions read it (the backend answers `unknown`) */

/** @param {any} walk */
function open(walk) {
  const p = new Player(walk);
  const model = walkthroughModel(p);
  const backend = walkthroughBackend(p, model);
  return { p, model, backend };
}

describe('walked modes', () => {
  it('Python writes the format the player reads; without modes (a replayed engine run) only gradient colours', () => {
    expect(z.walkthrough().format).toBe(WALKTHROUGH_FORMAT);
    expect(open(z.walkthrough()).backend.answers.has('memory')).toBe(true);
    const engineRun = { ...z.walkthrough(), modes: null };
    const { backend, p } = open(engineRun);
    expect(p.modes).toBeNull();
    expect([...backend.answers].sort()).toEqual(['first_nonfinite', 'inspect', 'search']);
  });

  it('answers memory (with and without leaves) and the probe with the walked replies', async () => {
    const walk = z.walkthrough();
    const { backend } = open(walk);
    const all = /** @type {{ top: { name: string }[], total: number }} */ (await backend.request({ type: 'memory', exclude_leaves: false }));
    expect(all).toEqual(walk.modes.memory.false);
    expect(all.top.map((t) => t.name)).toEqual(['PowBackward0']); // Pow saved x
    const noLeaves = /** @type {{ total: number }} */ (await backend.request({ type: 'memory', exclude_leaves: true }));
    expect(noLeaves).toEqual(walk.modes.memory.true);
    expect(noLeaves.total).toBeLessThan(all.total); // x is a leaf
    const probe = /** @type {Reply} */ (await backend.request({ type: 'probe', samples: 16, seed: 0 }));
    expect(probe).toEqual(walk.modes.probe);
    expect(probe.nodes.n1.estimate).toBe(16); // d(x**2)/dx = 4, squared: Python's number
  });

  it('a refusal Python walked comes back as the rejection the kernel would give', async () => {
    const walk = z.walkthrough();
    Object.assign(walk.modes, { probe: { error: 'probe: no can do' } }); // a refusal in place of the answer
    await expect(open(walk).backend.request({ type: 'probe' })).rejects.toThrow('no can do');
  });

  it('First NaN/Inf: a search runs to the walked step and selects where it is born', async () => {
    const walk = nonfinite.walkthrough();
    const { p, model, backend } = open(walk);
    const f = walk.first_nonfinite;
    expect(f.step).toBe(4);
    const positions = [];
    model.on('change:_state', () => positions.push(model.get('_state').position));
    const data = /** @type {Reply} */ (await backend.request({ type: 'first_nonfinite', chunk_ms: 100 }));
    expect(p.k).toBe(f.step);
    expect(positions).toEqual([f.step]);
    expect(data).toEqual(f.reply);
    expect(data.sentence).toMatch(/born in SqrtBackward0/);
    expect(model.get('selected')).toBe(f.select);
    expect(model.get('selected_edge')).toBe(data.id);
    // later on (or at the end, without searching), the same answer, no move
    backend.command({ type: 'run' });
    const end = p.k;
    expect(await backend.request({ type: 'first_nonfinite' })).toEqual(f.reply);
    expect(p.k).toBe(end);
  });

  it('First NaN/Inf with none: the end says so, a search runs to the end', async () => {
    const { p, backend } = open(z.walkthrough());
    const seek = /** @type {Reply} */ (await backend.request({ type: 'first_nonfinite', chunk_ms: 100 }));
    expect(seek.edge).toBeNull();
    expect(seek.message).toBe('no NaN/Inf gradient in the whole backward');
    expect(p.atEnd).toBe(true);
    expect(/** @type {Reply} */ (await backend.request({ type: 'first_nonfinite' })).message).toBe('no NaN/Inf gradient so far');
  });

  it('First NaN/Inf stops at a failing step, as the live search does', () => {
    const p = new Player(broken.walkthrough());
    const out = walkthroughNonfinite(p, { chunk_ms: 100 });
    expect(out.moved).toBe(true);
    expect(p.atEnd).toBe(true);
    expect(p.scalars().error).not.toBeNull();
    expect(/** @type {Reply} */ (out.data).message).toMatch(/^stopped looking: AddmmBackward0 failed/);
  });
});

describe('toolbar separators', () => {
  it('shows one separator between two shown groups, none at the ends or doubled', () => {
    const bar = document.createElement('div');
    const mk = (cls, hidden = false) => {
      const e = document.createElement('span');
      e.className = cls;
      e.hidden = hidden;
      bar.append(e);
      return e;
    };
    mk('a');
    const s1 = mk('agw-sep');
    mk('b', true);
    const s2 = mk('agw-sep');
    mk('c');
    const s3 = mk('agw-sep');
    mk('d', true);
    tidySeparators(bar);
    expect([s1.hidden, s2.hidden, s3.hidden]).toEqual([false, true, true]);
  });
});

describe('the live widget showing a replayed engine run', () => {
  it('hides the colour modes and leaves no empty separator where they were', () => {
    // a graph with no plumbing to hide: that toggle is hidden too, so two separators meet
    const { el, cleanup } = mountView({ _graph: { ...z.graph(), source: 'recording', capabilities: undefined, show_plumbing: undefined }, _state: z.state(0), selected: null, selected_edge: null });
    expect(el.querySelector('.agw-plumbing-input').closest('label').hidden).toBe(true);
    const nav = el.querySelector('.agw-nav');
    expect(el.querySelector('select[aria-label="Colour mode"]').hidden).toBe(true);
    const shown = [...nav.children].filter((c) => !c.hidden).map((c) => c.classList.contains('agw-sep'));
    expect(shown.at(-1)).toBe(false);
    expect(shown.some((v, i) => v && shown[i + 1])).toBe(false);
    cleanup();
  });
});

describe('the standalone page', () => {
  /** @param {any} walk */
  function page(walk) {
    const el = document.createElement('main');
    document.body.append(el);
    const cleanup = mountWalkthrough(el, walk, { fill: true });
    const shown = (sel) => [...el.querySelectorAll(sel)].filter((e) => !e.hidden && !e.closest('[hidden]'));
    const button = (name) => [...el.querySelectorAll('button')].find((b) => b.textContent === name);
    return { el, cleanup, shown, button };
  }

  it('offers the walked modes and no kernel-only control, with no empty separator', async () => {
    const { el, cleanup, button } = page(nonfinite.walkthrough());
    const nav = el.querySelector('.agw-nav');
    const kids = [...nav.children].filter((c) => !c.hidden);
    expect(kids[0].classList.contains('agw-sep')).toBe(false);
    for (let i = 1; i < kids.length; i++) {
      expect(kids[i].classList.contains('agw-sep') && kids[i - 1].classList.contains('agw-sep')).toBe(false);
    }
    expect(kids.at(-1).classList.contains('agw-sep')).toBe(false);
    expect(button('First NaN/Inf').hidden).toBe(false);
    const select = /** @type {HTMLSelectElement} */ (el.querySelector('select[aria-label="Colour mode"]'));
    expect(select.hidden).toBe(false);
    expect([...select.options].filter((o) => !o.hidden).map((o) => o.value)).toEqual(['gradient', 'memory', 'sensitivity']);
    expect(el.querySelector('.agw-plumbing-input').closest('label').hidden).toBe(true);
    expect(el.querySelector('.agw-direction')).toBeNull();
    cleanup();
  });

  it('a click on a folded box inspects it, with no unfold or fold control', async () => {
    const { el, cleanup, button } = page(broken.walkthrough());
    const canvas = /** @type {HTMLCanvasElement & { agwPainted: import('../src/canvas.js').Painted }} */ (el.querySelector('canvas.agw-canvas'));
    const box = canvas.agwPainted.items.find((it) => it.kind === 'box');
    expect(box).toBeTruthy();
    clickItem(el, box.index); // a walkthrough cannot unfold: a click inspects the box
    await flush();
    await flush();
    const insp = el.querySelector('section[aria-label="Inspector"]');
    expect(insp.hidden).toBe(false);
    expect(insp.textContent).toMatch(/folded module/);
    expect(button('Expand')).toBeUndefined();
    expect(button('Collapse module')).toBeUndefined();
    expect(button('Run through module')).toBeTruthy(); // stepping works offline
    cleanup();
  });

  it('fills its element and takes keys pressed on the page: ? opens the help', () => {
    const { el, cleanup } = page(z.walkthrough());
    const root = el.querySelector('.agw-root');
    expect(root.style.height).toBe('100%');
    const help = el.querySelector('.agw-help');
    expect(help.hidden).toBe(true);
    document.body.dispatchEvent(new KeyboardEvent('keydown', { key: '?', shiftKey: true, bubbles: true, cancelable: true }));
    expect(help.hidden).toBe(false);
    // its mouse table says what a click on a folded module does here: inspect (no kernel to unfold)
    expect(help.querySelector('.agw-help-mouse').textContent).toMatch(/click a folded moduleinspect it/);
    expect(help.querySelector('.agw-help-mouse').textContent).not.toMatch(/unfold it/);
    document.body.dispatchEvent(new KeyboardEvent('keydown', { key: 'Escape', bubbles: true, cancelable: true }));
    expect(help.hidden).toBe(true);
    cleanup();
  });
});
