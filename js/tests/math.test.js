// @ts-check
import { beforeEach, describe, expect, it, vi } from 'vitest';
import { formulaInfo, renderMath, renderNote } from '../src/math.js';
import { decodeGraph, decodeState } from '../src/model.js';
import { createInspector } from '../src/panel.js';
import { addmmReply, boxGraph, boxState } from './fixtures.js';

describe('renderMath', () => {
  it('typesets LaTeX as MathML (no fonts needed)', () => {
    const r = renderMath('\\mathrm{grad}_{\\mathrm{mat1}} = G\\,\\mathrm{mat2}^{\\top}');
    expect(r.ok).toBe(true);
    expect(r.html).toContain('<math');
    expect(r.html).toContain('<msup>');
    expect(r.html).not.toContain('katex-html'); // MathML only: no HTML layer that needs the CSS
  });

  it('shows unparsable LaTeX as escaped source, never throws', () => {
    const r = renderMath('\\frac{<b>');
    expect(r.ok).toBe(false);
    expect(r.html).toBe('<code class="agw-math-src">\\frac{&lt;b&gt;</code>');
  });

  it('typesets the math of a note between $ signs, the text escaped', () => {
    const html = renderNote('$y = \\sigma(x)$ is the saved result; <b> & $\\frac{$');
    expect(html.startsWith('<span class="katex"><math')).toBe(true);
    expect(html).toContain(' is the saved result; &lt;b&gt; &amp; ');
    expect(html).not.toContain('$');
    expect(html.endsWith('<code class="agw-math-src">\\frac{</code>')).toBe(true); // never throws
    expect(renderNote('no math here')).toBe('no math here');
  });

  it('normalises the reply field', () => {
    expect(formulaInfo(null)).toBe(null);
    expect(formulaInfo({ known: 1, latex: 'x', shapes: 5 })).toEqual({ known: true, latex: 'x', shapes: '', note: '' });
  });
});

describe('inspector: the Formula tab', () => {
  beforeEach(() => {
    document.body.innerHTML = '';
  });
  const g = decodeGraph(boxGraph());
  const s = decodeState(boxState(3), g);
  function show(formula) {
    const hd = { close: vi.fn(), collapse: vi.fn(), expand: vi.fn(), runTo: vi.fn(), selectNode: vi.fn(), highlight: vi.fn() };
    const insp = createInspector(document, hd);
    document.body.append(insp.el);
    insp.render({ kind: 'node', key: 'node:n6', id: 'n6', item: -1, data: { ...addmmReply(), formula }, graph: g, state: s });
    const tab = [...insp.el.querySelectorAll('[role=tab]')].find((b) => b.textContent.startsWith('Formula'));
    tab.click();
    return insp.el.querySelector('[role=tabpanel]');
  }

  it('renders the formula and the version with shapes', () => {
    const panel = show({ known: true, latex: 'G\\,W^{\\top}', shapes: '[16\\times 8]\\cdot[8\\times 4]', note: '' });
    const maths = panel.querySelectorAll('.agw-math math');
    expect(maths.length).toBe(2);
    expect(panel.textContent).toContain('What AddmmBackward0 computes');
    expect(panel.textContent).toContain("With this node's shapes");
  });

  it('says plainly when the type has no formula', () => {
    const panel = show({ known: false, latex: '', note: 'No formula for FooBackward0 yet.' });
    expect(panel.querySelector('math')).toBe(null);
    expect(panel.textContent).toContain('No formula for FooBackward0 yet.');
  });
});

describe('inspector: why a step failed', () => {
  it('says why under the error, with the culprit to select and the traceback', () => {
    document.body.innerHTML = '';
    const g = decodeGraph(boxGraph());
    const s = decodeState(boxState(3), g);
    const hd = { close: vi.fn(), collapse: vi.fn(), expand: vi.fn(), runTo: vi.fn(), selectNode: vi.fn(), highlight: vi.fn() };
    const insp = createInspector(document, hd);
    document.body.append(insp.el);
    const data = {
      ...addmmReply(),
      error: 'one of the variables needed for gradient computation has been modified by an inplace operation',
      explanation: { sentence: 'saved `result` was changed in place (version 0 -> 1) by MulBackward0', hint: 'run the forward under torch.autograd.set_detect_anomaly(True)', culprit: 'n3', traceback: ['  File "x.py", line 3, in f', '    b.mul_(2)'] },
    };
    insp.render({ kind: 'node', key: 'node:n6', id: 'n6', item: -1, data, graph: g, state: s });
    const why = insp.el.querySelector('.agw-insp-why');
    expect(why.textContent).toContain('Why: saved `result` was changed in place');
    expect(why.textContent).toContain('set_detect_anomaly');
    [...why.querySelectorAll('button')].find((b) => b.textContent === 'show the in-place op').click();
    expect(hd.selectNode).toHaveBeenCalledWith('n3');
    expect(why.querySelector('details pre').textContent).toContain('b.mul_(2)');
  });
});
