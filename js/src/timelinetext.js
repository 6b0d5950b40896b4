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
 * The reading of one cell: "step 137 · layer1.0.conv1 · gradient norm 0.0023 · ×1.8 against
 * step 136". `values` is the row's log10 norms (one per watched step), `k` the column.
 * @param {{ step: number, prevStep: number | null, name: string, v: number, prev: number }} c
 * @returns {string}
 * @example cellText({ step: 4, prevStep: 2, name: 'fc', v: -2, prev: -3 }) // 'step 4 · fc · gradient norm 0.01 · ×10 against step 2'
 */
export function cellText({ step, prevStep, name, v, prev }) {
  const head = `step ${step} · ${name}`;
  if (Number.isNaN(v)) return `${head} · not in this step's graph`;
  if (v === Infinity) return `${head} · NaN/Inf in its gradient`;
  let change;
  if (prevStep === null) change = 'the first watched step';
  else if (Number.isNaN(prev)) change = `nothing at step ${prevStep}`;
  else if (prev === Infinity) change = `NaN/Inf at step ${prevStep}`;
  else if (v === -Infinity || prev === -Infinity) change = v === prev ? `0 at step ${prevStep} too` : `from ${normText(prev)} at step ${prevStep}`;
  else {
    const f = 10 ** (v - prev);
    change = `×${f >= 100 || f < 0.01 ? f.toExponential(1).replace('e+', 'e') : parseFloat(f.toPrecision(2))} against step ${prevStep}`;
  }
  return `${head} · gradient norm ${normText(v)} · ${change}`;
}

/**
 * What the First NaN/Inf button says of the first non-finite step: where it went non-finite, and
 * for a NaN/Inf made in the forward, the forward op and its module (`origin`); a healed one says
 * so. `every`: the watch's interval (an unwatched step has no birth node).
 * @param {import('./timeline.js').First} f @param {import('./timeline.js').Origin | null} o @param {number} every
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
 * @param {import('./timeline.js').Healed} hd
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
