// The engine's emitter: a listener that throws is reported, and neither the emitting code nor
// the other listeners notice.

import type { EventEmitter } from 'node:events';
import { describe, expect, it } from 'vitest';
import { EngineEventEmitter } from '../../src/core/events.ts';

function emitter() {
  const thrown: Array<[string, unknown]> = [];
  return { events: new EngineEventEmitter((event, err) => thrown.push([event, err])), thrown };
}

describe('EngineEventEmitter', () => {
  it('runs every listener, reports each throw to the callback and as an error event, and never throws', () => {
    const { events, thrown } = emitter();
    const boom = new Error('boom');
    const heard: string[] = [];
    const errors: Array<{ where: string; error: unknown }> = [];
    events.on('fenced', () => {
      throw boom;
    });
    events.on('fenced', ({ kind }) => heard.push(kind));
    events.on('error', (e) => errors.push(e));
    expect(events.emit('fenced', { kind: 'complete', count: 1 })).toBe(true);
    expect(heard).toEqual(['complete']);
    expect(thrown).toEqual([['fenced', boom]]);
    expect(errors).toEqual([{ where: 'listener:fenced', error: boom }]);
  });

  it("an 'error' listener that throws is reported once, without a loop, and the others still hear", () => {
    const { events, thrown } = emitter();
    const heard: string[] = [];
    events.on('error', () => {
      throw new Error('error listener');
    });
    events.on('error', ({ where }) => heard.push(where));
    events.on('reaped', () => {
      throw new Error('reaped listener');
    });
    expect(() => events.emit('reaped', { count: 1, fast: true })).not.toThrow();
    expect(heard).toEqual(['listener:reaped']);
    expect(thrown.map(([event, err]) => [event, (err as Error).message])).toEqual([
      ['reaped', 'reaped listener'],
      ['error', 'error listener'],
    ]);
  });

  it('a report callback that throws (a logger choking on the thrown value) is ignored too', () => {
    const events = new EngineEventEmitter(() => {
      throw new Error('logger');
    });
    const heard: string[] = [];
    events.on('started', () => {
      throw new Error('listener');
    });
    events.on('started', () => heard.push('second'));
    events.on('error', ({ where }) => heard.push(where));
    expect(() => events.emit('started', { job: {} as never, startLatencyMs: 0 })).not.toThrow();
    expect(heard).toEqual(['listener:started', 'second']);
  });

  it('has a listener for error from the start, and keeps once(), off() and the return value of emit', () => {
    const { events } = emitter();
    expect(() => events.emit('error', { where: 'x', error: new Error('unheard') })).not.toThrow();
    expect(events.emit('claimed', { queue: 'q', count: 1, durationMs: 1 })).toBe(false);
    let once = 0;
    events.once('leaseLost', () => {
      once++;
      throw new Error('once');
    });
    events.emit('leaseLost', { job: {} as never });
    events.emit('leaseLost', { job: {} as never });
    expect(once).toBe(1);
    expect(events.listenerCount('leaseLost')).toBe(0);
    const off = () => undefined;
    events.on('enqueued', off);
    events.off('enqueued', off);
    expect(events.emit('enqueued', { queue: 'q', count: 1 })).toBe(false);
  });
});

describe('EngineEventEmitter types', () => {
  it("keeps a known event's payload checked, and a symbol event works", () => {
    const { events, thrown } = emitter();
    // Never called: the type checker is the test (npm run typecheck).
    const wrongPayload = () => {
      // @ts-expect-error 'claimed' carries { queue, count, durationMs }
      events.emit('claimed', { queue: 'q' });
    };
    expect(typeof wrongPayload).toBe('function');
    const sym = Symbol('custom');
    (events as EventEmitter).on(sym, () => {
      throw new Error('symbol listener');
    });
    const errors: string[] = [];
    events.on('error', ({ where }) => errors.push(where));
    expect(events.emit(sym, 1)).toBe(true);
    expect(errors).toEqual(['listener:Symbol(custom)']);
    expect(thrown.map(([event]) => event)).toEqual(['Symbol(custom)']);
  });
});
