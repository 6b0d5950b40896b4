/**
 * All message I/O of a view goes through a backend: commands out, inspect requests answered by
 * replies, warnings in. The kernel backend speaks the widget's custom messages; the standalone
 * page supplies another object with the same shape (walkthrough.js: playing its walkthrough)
 * and the view does not change.
 *
 * @typedef {{ node: number } | { edge: number } | { id: string }} InspectTarget what an inspect
 *   request names: a visible item, a visible edge, or a real node by id
 * @typedef {(msg: import('./protocol.js').Message) => Promise<unknown>} Request
 *   a request/reply message (search, memory, first_nonfinite, inspect...): `request` is added,
 *   the reply's `data` returned, as `unknown`: the asker decodes it (inspect.js `decodeInspectReply`...)
 *
 * @typedef {object} Backend
 * @property {(cmd: import('./protocol.js').Message) => void} command send a command
 * @property {(target: InspectTarget) => Promise<unknown>} inspect the reply's `data`
 * @property {Request} [request] every request/reply message
 * @property {(cb: (message: string) => void) => () => void} onWarning returns unsubscribe
 * @property {boolean} live true when a kernel answers (false: a walkthrough)
 * @property {ReadonlySet<string>} [answers] without a kernel: the request types this backend
 *   answers (the view offers no control whose request it would refuse)
 * @property {() => void} dispose
 */

import { asRecord } from './jsonsafe.js';
import { MSG, REPLY } from './protocol.js';

/**
 * The target an inspect message names (`{ type: MSG.INSPECT, node | edge | id }`), for a
 * backend that answers inspect requests only (`Backend.inspect`).
 * @param {import('./protocol.js').Message} msg
 * @returns {InspectTarget}
 * @example
 * inspectTargetOf({ type: 'inspect', edge: 3 }); // { edge: 3 }
 */
export function inspectTargetOf(msg) {
  if (typeof msg.id === 'string') return { id: msg.id };
  if (msg.edge !== undefined) return { edge: Number(msg.edge) };
  return { node: Number(msg.node) };
}

/** How long an inspect request waits for its reply. */
export const INSPECT_TIMEOUT_MS = 10000;

/**
 * The backend over an anywidget model: `model.send` out, `msg:custom` in.
 * Request ids start at a random offset, so replies meant for another view of the same widget
 * (every view receives every custom message) are never mistaken for ours.
 * @param {Pick<import('./protocol.js').WidgetModel, 'send' | 'on' | 'off'>} model
 * @param {{ timeoutMs?: number }} [opts]
 * @returns {Backend & { request: NonNullable<Backend['request']> }}
 */
export function kernelBackend(model, opts = {}) {
  const timeoutMs = opts.timeoutMs ?? INSPECT_TIMEOUT_MS;
  let next = 1 + Math.floor(Math.random() * 1e9);
  /** @type {Map<number, { resolve: (v: unknown) => void, reject: (e: Error) => void, timer: ReturnType<typeof setTimeout> }>} */
  const pending = new Map();
  /** @type {Set<(m: string) => void>} */
  const warned = new Set();
  let disposed = false;

  /** @param {unknown} raw a custom message from the kernel */
  const onMsg = (raw) => {
    if (!raw || typeof raw !== 'object') return;
    const msg = asRecord(raw);
    if (msg.type === REPLY.REPLY) {
      const p = pending.get(Number(msg.request));
      if (!p) return;
      pending.delete(Number(msg.request));
      clearTimeout(p.timer);
      if (msg.error) p.reject(new Error(String(msg.error)));
      else p.resolve(msg.data ?? null);
    } else if (msg.type === REPLY.WARNING) {
      for (const cb of warned) cb(String(msg.message ?? ''));
    }
  };
  model.on('msg:custom', onMsg);

  /** @type {Request} */
  function request(msg) {
    if (disposed) return Promise.reject(new Error('view closed'));
    const id = next++;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        pending.delete(id);
        reject(new Error('no reply from the kernel'));
      }, timeoutMs);
      pending.set(id, { resolve, reject, timer });
      model.send({ ...msg, request: id });
    });
  }

  return {
    live: true,
    command(cmd) {
      if (!disposed) model.send(cmd);
    },
    inspect(target) {
      return request({ type: MSG.INSPECT, ...target });
    },
    request,
    onWarning(cb) {
      warned.add(cb);
      return () => warned.delete(cb);
    },
    dispose() {
      disposed = true;
      model.off('msg:custom', onMsg);
      for (const p of pending.values()) {
        clearTimeout(p.timer);
        p.reject(new Error('view closed'));
      }
      pending.clear();
      warned.clear();
    },
  };
}
