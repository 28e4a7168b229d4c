// Unit tests (no database) of the wake-up notifier's leading-edge debounce,
// driven by fake timers: the first notify in a quiet window sends at once, a
// burst inside the window coalesces into exactly one trailing send, and a quiet
// window sends nothing more; takeLeading hands the leading edge to the caller.

import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { channelFor, Notifier } from '../../src/core/notifier.ts';

function setup(debounceMs = 100, send = vi.fn(async (_channels: string[]) => undefined)) {
  const onError = vi.fn();
  const notifier = new Notifier({ debounceMs, send, channelOf: (q) => `ch:${q}`, onError });
  return { notifier, send, onError };
}

describe('Notifier', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('sends the first notify of a quiet window at once (leading edge)', () => {
    const { notifier, send } = setup();
    notifier.notify(['emails']);
    expect(send).toHaveBeenCalledTimes(1);
    expect(send).toHaveBeenLastCalledWith(['ch:emails']);
  });

  it('coalesces a burst inside the window into exactly one trailing send', () => {
    const { notifier, send } = setup(100);
    notifier.notify(['emails']);
    for (let i = 0; i < 50; i++) {
      vi.advanceTimersByTime(1);
      notifier.notify(['emails']);
    }
    expect(send).toHaveBeenCalledTimes(1);
    vi.advanceTimersByTime(49); // t = 99: window still open
    expect(send).toHaveBeenCalledTimes(1);
    vi.advanceTimersByTime(1); // t = 100: window closes, trailing send owed
    expect(send).toHaveBeenCalledTimes(2);
    expect(send).toHaveBeenLastCalledWith(['ch:emails']);
    // The trailing send opened a new window; it stays quiet, so nothing more is sent.
    vi.advanceTimersByTime(1_000);
    expect(send).toHaveBeenCalledTimes(2);
  });

  it('sends nothing when the window stays quiet, and leads again after it', () => {
    const { notifier, send } = setup(100);
    notifier.notify(['emails']);
    vi.advanceTimersByTime(500);
    expect(send).toHaveBeenCalledTimes(1);
    expect(vi.getTimerCount()).toBe(0);
    notifier.notify(['emails']);
    expect(send).toHaveBeenCalledTimes(2);
  });

  it('debounces each queue on its own and batches leading sends of one call', () => {
    const { notifier, send } = setup(100);
    notifier.notify(['a', 'b', 'a']);
    expect(send).toHaveBeenCalledTimes(1);
    expect(send.mock.calls[0]![0].sort()).toEqual(['ch:a', 'ch:b']);
    notifier.notify(['a']); // inside a's window: trailing
    notifier.notify(['c']); // c is quiet: leads at once
    expect(send).toHaveBeenCalledTimes(2);
    expect(send).toHaveBeenLastCalledWith(['ch:c']);
    vi.advanceTimersByTime(100);
    expect(send).toHaveBeenCalledTimes(3);
    expect(send).toHaveBeenLastCalledWith(['ch:a']);
  });

  it('with debounceMs 0 sends every notify at once and keeps no timers', () => {
    const { notifier, send } = setup(0);
    notifier.notify(['q']);
    notifier.notify(['q']);
    expect(send).toHaveBeenCalledTimes(2);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('takeLeading hands quiet queues to the caller, opening their windows; a later notify inside one trails', () => {
    const { notifier, send } = setup(100);
    notifier.notify(['busy']);
    expect(notifier.takeLeading(['quiet', 'busy', 'quiet'])).toEqual(['quiet']);
    // The caller sends the leading NOTIFY itself: nothing was sent here.
    expect(send).toHaveBeenCalledTimes(1);
    // Inside the windows takeLeading gives nothing; notify() after the commit owes a trailing send.
    expect(notifier.takeLeading(['quiet'])).toEqual([]);
    notifier.notify(['quiet']);
    expect(send).toHaveBeenCalledTimes(1);
    vi.advanceTimersByTime(100);
    expect(send).toHaveBeenCalledTimes(2);
    expect(send).toHaveBeenLastCalledWith(['ch:quiet']);
    // A window taken by takeLeading and left quiet owes nothing.
    vi.advanceTimersByTime(1_000);
    expect(notifier.takeLeading(['q2'])).toEqual(['q2']);
    vi.advanceTimersByTime(1_000);
    expect(send).toHaveBeenCalledTimes(2);
  });

  it('with debounceMs 0 takeLeading hands back every queue and keeps no timers', () => {
    const { notifier } = setup(0);
    expect(notifier.takeLeading(['a', 'b'])).toEqual(['a', 'b']);
    expect(notifier.takeLeading(['a'])).toEqual(['a']);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('drops owed trailing sends on stop', () => {
    const { notifier, send } = setup(100);
    notifier.notify(['q']);
    notifier.notify(['q']);
    notifier.stop();
    vi.advanceTimersByTime(1_000);
    expect(send).toHaveBeenCalledTimes(1);
  });

  it('reports a failed send to onError instead of throwing', async () => {
    const boom = new Error('db down');
    const { notifier, onError } = setup(
      100,
      vi.fn(async () => {
        throw boom;
      }),
    );
    expect(() => notifier.notify(['q'])).not.toThrow();
    await vi.waitFor(() => expect(onError).toHaveBeenCalledWith(boom));
  });
});

describe('channelFor', () => {
  it('is a stable, unquoted-safe identifier distinct per schema and queue', () => {
    const c = channelFor('baton', 'emails');
    expect(c).toMatch(/^baton_[0-9a-f]{24}$/);
    expect(channelFor('baton', 'emails')).toBe(c);
    expect(channelFor('other', 'emails')).not.toBe(c);
    expect(channelFor('baton', 'sms')).not.toBe(c);
  });
});
