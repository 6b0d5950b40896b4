// @ts-check
// The standalone page opening at a given step (`save_html(start=...)`), and two walkthroughs
// played side by side, stepped together (`RecordingPair.save_html`), as the live pair does.
import { describe, expect, it } from 'vitest';
import { Player, follow, mountWalkthrough, mountWalkthroughPair } from '../src/walkthrough.js';
import { broken, z } from './fixtures.js';
import { useViewTestHooks } from './mount.js';

useViewTestHooks();

/** @param {HTMLElement} el */
const statusOf = (el) => el.querySelector('.agw-status')?.textContent ?? '';
/** @param {HTMLElement} el @param {string} name */
const button = (el, name) => [...el.querySelectorAll('button')].find((b) => b.textContent === name);

function host() {
  const el = document.createElement('div');
  document.body.append(el);
  return el;
}

describe('a page that opens at a step', () => {
  it('starts at `start` (clamped to the recorded steps); Reset still goes to step 0', () => {
    const p = new Player({ ...z.walkthrough(), start: 3 });
    expect(p.k).toBe(3);
    expect(p.state().status).toMatch(/^ran PowBackward0 \(step 3 \/ 4\)/);
    p.reset();
    expect(p.k).toBe(0);
    expect(new Player({ ...z.walkthrough(), start: 99 }).k).toBe(4);
    expect(new Player({ ...z.walkthrough(), start: -2 }).k).toBe(0);
    expect(new Player(z.walkthrough()).k).toBe(0); // no start: step 0, as before
  });

  it('draws the opening step, and Reset returns to 0', () => {
    const el = host();
    const cleanup = mountWalkthrough(el, { ...z.walkthrough(), start: 4 }, { fill: true });
    expect(statusOf(el)).toContain('done');
    button(el, 'Reset').click();
    expect(statusOf(el)).toContain('step 0 / 4');
    cleanup();
  });
});

describe('two walkthroughs stepped together', () => {
  it('follow() brings the other side to the same number of steps, stopping where it fails', () => {
    const a = new Player(z.walkthrough());
    const b = new Player(broken.walkthrough());
    const failsAt = b.steps.findIndex((s) => s.scalars.error) + 1; // deltas up to the failed one
    expect(failsAt).toBeGreaterThan(1);
    while (a.forward());
    follow(a, b);
    expect(b.scalars().error).toBeTruthy(); // stopped at its own failing step
    expect(b.k).toBe(failsAt);
    a.reset();
    follow(a, b);
    expect(b.k).toBe(0);
    a.forward();
    follow(a, b);
    expect(Number(b.scalars().position)).toBe(1);
    follow(b, a);
    expect(Number(a.scalars().position)).toBe(1);
  });

  it('a Step, Back or Reset on either side moves the other', () => {
    const left = host();
    const right = host();
    const cleanup = mountWalkthroughPair([left, right], [z.walkthrough(), { ...z.walkthrough(), title: 'other' }], { fill: true });
    expect(statusOf(right)).toContain('step 0 / 4');
    button(left, 'Step').click();
    expect(statusOf(left)).toContain('step 1 / 4');
    expect(statusOf(right)).toContain('step 1 / 4');
    button(right, 'Run to end').click();
    expect(statusOf(left)).toContain('done');
    button(left, 'Back').click();
    expect(statusOf(right)).toContain('step 3 / 4');
    button(right, 'Reset').click();
    expect(statusOf(left)).toContain('step 0 / 4');
    cleanup();
  });

  it('both sides open at the left side start', () => {
    const left = host();
    const right = host();
    const cleanup = mountWalkthroughPair([left, right], [{ ...z.walkthrough(), start: 2 }, z.walkthrough()]);
    expect(statusOf(left)).toContain('step 2 / 4');
    expect(statusOf(right)).toContain('step 2 / 4');
    cleanup();
  });
});
