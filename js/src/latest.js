/**
 * ONE "latest reply wins" request channel, for every request the view makes whose answer a
 * newer one supersedes: the inspector's data, a colour mode's report, a search, First NaN/Inf,
 * the leaf diff, the hover card. Pure: no DOM, no timers.
 *
 * Guarantees: the answer to an `ask` (its reply, or its error) reaches that ask's handlers only
 * when it is current: no newer `ask` started on the same channel since, or the newest one asks
 * the same question (the same `key`: the inspector asking again for the target it shows), and
 * `still()` (when given) holds when it arrives; `drop()` makes every ask in flight stale (a
 * closed view: nothing runs after it); `waiting` is true from an ask until a current one is
 * answered; `done` runs once a current answer was handled (or dropped by `still`), never for a
 * superseded one.
 */

/**
 * The text of a rejection: an Error's message, else the value itself.
 * @param {unknown} err
 * @returns {string}
 * @example errorText(new Error('no reply from the kernel')) // 'no reply from the kernel'
 */
export function errorText(err) {
  return String(/** @type {{ message?: unknown } | null | undefined} */ (err)?.message ?? err);
}

/**
 * @template T
 * @typedef {object} AskHandlers
 * @property {string} [key] what the ask is about: an older ask with the newest ask's key is
 *   answered too (none: only the newest ask is)
 * @property {() => boolean} [still] is the answer still wanted? (checked when it arrives; the
 *   reply and the error are both dropped when not)
 * @property {(data: T) => unknown} [reply] the answer; what it returns (a promise: a follow-up
 *   ask) is awaited by the promise `ask` returns
 * @property {(message: string, err: unknown) => void} [error] the rejection's text; also a
 *   `reply` handler that threw
 * @property {() => void} [done] after a current ask's answer
 */

/**
 * @template M, T
 * @typedef {object} Latest
 * @property {(msg: M, on?: AskHandlers<T>) => Promise<unknown>} ask send `msg`; earlier asks of
 *   this channel become stale. The promise settles (never rejects) once the handlers ran, and
 *   the promise a `reply` handler returned.
 * @property {() => void} drop make every ask in flight stale
 * @property {boolean} waiting an ask is on its way and no current one was answered since
 */

/**
 * A channel over `send` (the backend's request, or another function answering with a promise).
 * @template M, T
 * @param {(msg: M) => Promise<T>} send
 * @returns {Latest<M, T>}
 * @example
 * const memory = latestReply((msg) => backend.request(msg));
 * memory.ask({ type: 'memory' }, { reply: (data) => show(data) });
 * memory.ask({ type: 'memory', exclude_leaves: true }, { reply: (data) => show(data) }); // only this one shows
 */
export function latestReply(send) {
  let newest = 0;
  /** @type {string | undefined} */
  let newestKey;
  let waiting = false;
  return {
    ask(msg, on = {}) {
      const mine = ++newest;
      newestKey = on.key;
      waiting = true;
      const current = () => mine === newest || (on.key !== undefined && on.key === newestKey);
      const settle = () => {
        if (current()) waiting = false;
      };
      const wanted = () => current() && (on.still ? on.still() : true);
      /** @type {Promise<T>} */
      let sent;
      try {
        sent = Promise.resolve(send(msg));
      } catch (err) {
        sent = Promise.reject(err);
      }
      return sent
        .then((data) => {
          settle();
          return wanted() ? on.reply?.(data) : undefined;
        })
        .catch((err) => {
          settle();
          if (wanted()) on.error?.(errorText(err), err);
        })
        .finally(() => {
          if (current()) on.done?.();
        });
    },
    drop() {
      newest += 1;
      newestKey = undefined;
      waiting = false;
    },
    get waiting() {
      return waiting;
    },
  };
}
