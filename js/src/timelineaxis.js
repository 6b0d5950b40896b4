/**
 * The timeline's step axis (timeline.js): where the step numbers go under the grid, so that a
 * newcomer reads "step 137" off the picture without hovering.
 *
 * Pure. The grid's columns are the watched steps, equally wide; a watched step sits at the centre
 * of its column (`columnX`), a step between two watched ones in proportion between theirs
 * (`stepX`: with `every=10`, step 15 halfway between the columns of 10 and 20). Ticks are "nice" step numbers
 * (1, 2 or 5 times a power of ten apart) at least `minPx` apart, always inside [first, last].
 */

/**
 * The x (CSS px) of the centre of watched column `k` of `n` on a `width` px grid.
 * @param {number} k @param {number} n @param {number} width
 * @returns {number}
 * @example columnX(0, 4, 100) // 12.5
 */
export function columnX(k, n, width) {
  return ((k + 0.5) / Math.max(1, n)) * width;
}

/**
 * The index of the watched step nearest to `step` (binary search; `watched` ascending), -1 when
 * there is none.
 * @param {ArrayLike<number>} watched @param {number} step
 * @returns {number}
 * @example nearestWatched([0, 10, 20], 14) // 1
 */
export function nearestWatched(watched, step) {
  const n = watched.length;
  if (!n) return -1;
  let a = 0;
  let b = n - 1;
  while (a < b) {
    const m = (a + b) >> 1;
    if (watched[m] < step) a = m + 1;
    else b = m;
  }
  if (a > 0 && Math.abs(watched[a - 1] - step) <= Math.abs(watched[a] - step)) return a - 1;
  return a;
}

/**
 * The x (CSS px) of step `step` on the grid of `watched` (ascending) `width` px wide: its
 * column's centre when watched, else in proportion between its neighbours' (clamped to the
 * first and the last).
 * @param {ArrayLike<number>} watched @param {number} step @param {number} width
 * @returns {number}
 * @example stepX([0, 10, 20], 15, 300) // 200
 */
export function stepX(watched, step, width) {
  const n = watched.length;
  if (!n) return 0;
  const k = nearestWatched(watched, step);
  const s = watched[k];
  if (s === step || (k === 0 && step < s) || (k === n - 1 && step > s)) return columnX(k, n, width);
  const j = step > s ? k + 1 : k - 1;
  const f = (step - s) / (watched[j] - s);
  return columnX(k, n, width) + f * (columnX(j, n, width) - columnX(k, n, width));
}

/**
 * A "nice" spacing (1, 2 or 5 x 10^k, at least 1) for `span` steps in at most `count` ticks.
 * @param {number} span @param {number} count
 * @returns {number}
 * @example [niceStep(300, 6), niceStep(12, 6), niceStep(3, 10)] // [50, 2, 1]
 */
export function niceStep(span, count) {
  const raw = span / Math.max(1, count);
  if (!(raw > 1)) return 1;
  const p = 10 ** Math.floor(Math.log10(raw));
  for (const m of [1, 2, 5, 10]) if (m * p >= raw) return m * p;
  return 10 * p;
}

/**
 * The axis ticks: nice step numbers between the first and the last watched step, each at its
 * `stepX`, at least `minPx` apart (a label is ~40 px wide).
 * @param {ArrayLike<number>} watched ascending step numbers @param {number} width CSS px
 * @param {number} [minPx]
 * @returns {{ step: number, x: number }[]}
 * @example stepTicks([0, 1, 2, 3, 4, 5, 6, 7, 8, 9], 500).map((t) => t.step) // [0, 1, 2, ..., 9]
 */
export function stepTicks(watched, width, minPx = 48) {
  const n = watched.length;
  if (!n || !(width > 0)) return [];
  const first = watched[0];
  const last = watched[n - 1];
  if (first === last) return [{ step: first, x: columnX(0, 1, width) }];
  const every = niceStep(last - first, Math.max(1, Math.floor(width / minPx)));
  const out = [];
  let prev = -Infinity;
  for (let s = Math.ceil(first / every) * every; s <= last; s += every) {
    const x = stepX(watched, s, width);
    if (x - prev < minPx * 0.75) continue;
    out.push({ step: s, x });
    prev = x;
  }
  return out;
}
