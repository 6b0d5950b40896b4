/**
 * What the timeline says in words (timeline.js): the reading of a cell (step, module, norm,
 * change against the previous watched step), which the hover tip, the keyboard's cell and screen
 * readers all show; and the sentences of First NaN/Inf (a NaN/Inf made in the forward names the
 * forward op and its module) and of a NaN/Inf born and healed within a step.
 *
 * Pure: strings from Python's facts, nothing computed beyond 10 ** (a log10 difference).
 * Guarantees: a cell's reading names the step and the row, and says plainly when nothing was
 * recorded, when the gradient held a NaN/Inf, and when there is no previous step; a healed
 * birth is always called healed.
 */
import { normText } from './timelinecolorbar.js';

/**
 * A step number as read: thousands separated ("61,234": a long run's steps at a glance).
 * @param {number} s
 * @returns {string}
 * @example stepNo(61234) // '61,234'
 */
export const stepNo = (s) => s.toLocaleString('en-US');

/**
 * The reading of one cell: "step 137 · layer1.0.conv1 · gradient norm 0.0023 · ×1.8 against
 * step 136". `v`, `prev`: the log10 norms at `step` and at the watched step before
 * (`prevStep`: null at the run's first, -1 when not known: a zoom's first column says no change).
 * @param {{ step: number, prevStep: number | null, name: string, v: number, prev: number }} c
 * @returns {string}
 * @example cellText({ step: 4, prevStep: 2, name: 'fc', v: -2, prev: -3 }) // 'step 4 · fc · gradient norm 0.01 · ×10 against step 2'
 */
export function cellText({ step, prevStep, name, v, prev }) {
  const head = `step ${stepNo(step)} · ${name}`;
  if (Number.isNaN(v)) return `${head} · not in this step's graph`;
  if (v === Infinity) return `${head} · NaN/Inf in its gradient`;
  let change;
  if (prevStep === -1) return `${head} · gradient norm ${normText(v)}`;
  if (prevStep === null) change = 'the first watched step';
  else if (Number.isNaN(prev)) change = `nothing at step ${stepNo(prevStep)}`;
  else if (prev === Infinity) change = `NaN/Inf at step ${stepNo(prevStep)}`;
  else if (v === -Infinity || prev === -Infinity) change = v === prev ? `0 at step ${stepNo(prevStep)} too` : `from ${normText(prev)} at step ${stepNo(prevStep)}`;
  else {
    const f = 10 ** (v - prev);
    change = `×${f >= 100 || f < 0.01 ? f.toExponential(1).replace('e+', 'e') : parseFloat(f.toPrecision(2))} against step ${stepNo(prevStep)}`;
  }
  return `${head} · gradient norm ${normText(v)} · ${change}`;
}

/**
 * The reading of a column holding several watched steps (a band of a long run): its steps, how
 * many were watched, and the largest and smallest norm among them (`hi`, `lo`: log10; `lo` NaN
 * when not known), so a spike inside the band is read, never averaged away.
 * @param {{ first: number, last: number, count: number, name: string, hi: number, lo: number }} c
 * @returns {string}
 * @example bandText({ first: 1000, last: 1999, count: 1000, name: 'fc', hi: 1, lo: -2 }) // 'steps 1,000–1,999 (1,000 watched) · fc · gradient norm 0.01 … 10 (smallest … largest)'
 */
export function bandText({ first, last, count, name, hi, lo }) {
  const head = `steps ${stepNo(first)}–${stepNo(last)} (${stepNo(count)} watched) · ${name}`;
  if (Number.isNaN(hi)) return `${head} · not in these steps' graphs`;
  if (hi === Infinity) return `${head} · NaN/Inf in a gradient${Number.isNaN(lo) || lo === Infinity ? '' : ` (smallest norm ${normText(lo)})`}`;
  if (Number.isNaN(lo) || lo === hi) return `${head} · largest gradient norm ${normText(hi)}`;
  return `${head} · gradient norm ${normText(lo)} … ${normText(hi)} (smallest … largest)`;
}

/**
 * What the First NaN/Inf button says of the first non-finite step: where it went non-finite, and
 * for a NaN/Inf made in the forward, the forward op and its module (`origin`); a healed one says
 * so. `every`: the watch's interval (an unwatched step has no birth node).
 * @param {import('./timelinedata.js').First} f @param {import('./timelinedata.js').Origin | null} o @param {number} every
 * @returns {string}
 * @example firstText({ step: 4, watched: true, node: 'n1', name: 'PowBackward0', cause: 'saved `self` has 3 NaNs', expected: false }, null, 1) // 'Step 4: born at PowBackward0 (n1): saved `self` has 3 NaNs'
 */
export function firstText(f, o, every) {
  if (!f.watched) return `Step ${f.step}: a parameter gradient came out non-finite; that step was not watched (every=${every}), watch every step to see where it was born`;
  if (o?.kind === 'healed') return `Step ${f.step} (healed within the step): ${f.cause ?? ''}${f.name ? ` · removed at ${f.name} (${f.node})` : ''}`;
  const at = f.name ? `at ${f.name} (${f.node})` : '';
  if (o?.where === 'forward' && o.forward_op) {
    const mod = o.forward_module ? ` in module ${o.forward_module}` : ' (no module recorded)';
    return `Step ${f.step}: made in the forward by ${o.forward_op}${o.forward_node ? ` (${o.forward_node})` : ''}${mod}${o.forward_cause ? `: ${o.forward_cause}` : ''}; the gradient went non-finite ${at}${f.cause ? `: ${f.cause}` : ''}`;
  }
  return `Step ${f.step}: ${f.name ? `born ${at}` : 'no birth node found'}${f.cause ? `: ${f.cause}` : ''}${f.expected ? " (the loss scaler's expected overflow)" : ''}`;
}

/**
 * What the Healed button says of the first step where a NaN/Inf was born and healed.
 * @param {import('./timelinedata.js').Healed} hd
 * @returns {string}
 * @example healedText({ steps: [3], count: 1, first: { step: 3, node: 'n2', name: 'MulBackward0', born_node: 'n1', born_name: 'SqrtBackward0', born_cause: 'saved `result` has 1 zero', module: null } })
 * // 'Step 3 (healed): a NaN/Inf born at SqrtBackward0 (n1): saved `result` has 1 zero; removed at MulBackward0 (n2) before any parameter gradient. 1 step had a NaN/Inf that healed: 3'
 */
export function healedText(hd) {
  const h = hd.first;
  const born = h.born_name ? `born at ${h.born_name} (${h.born_node})${h.module ? ` in module ${h.module}` : ''}${h.born_cause ? `: ${h.born_cause}` : ''}` : 'born';
  const cut = h.name ? `; removed at ${h.name} (${h.node}) before any parameter gradient` : '';
  const list = `${hd.count} step${hd.count === 1 ? '' : 's'} had a NaN/Inf that healed: ${hd.steps.join(', ')}${hd.count > hd.steps.length ? ', …' : ''}`;
  return `Step ${h.step} (healed): a NaN/Inf ${born}${cut}. ${list}`;
}
