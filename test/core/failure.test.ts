// Unit tests (no database) of failure classification: the terminal-error classifier (cause
// chains, cycles, AggregateError) and the bounded, NUL-free error description stored in
// the error history. The backoff is SQL's: see the executor's failMany tests.

import { describe, expect, it } from 'vitest';
import { describeError, isTerminal } from '../../src/core/failure.ts';
import { TerminalError } from '../../src/types/errors.ts';

describe('isTerminal', () => {
  it('is true for a TerminalError and false for ordinary errors and non-errors', () => {
    expect(isTerminal(new TerminalError('bad input'))).toBe(true);
    expect(isTerminal(new Error('flaky'))).toBe(false);
    expect(isTerminal(new TypeError('x is undefined'))).toBe(false);
    for (const v of [undefined, null, 'TerminalError', 42, {}, []]) expect(isTerminal(v)).toBe(false);
  });

  it('finds a TerminalError anywhere in a cause chain', () => {
    const root = new TerminalError('card declined');
    const wrapped = new Error('charge failed', { cause: new Error('gateway said no', { cause: root }) });
    expect(isTerminal(wrapped)).toBe(true);
    expect(isTerminal(new Error('outer', { cause: new Error('inner', { cause: new Error('root') }) }))).toBe(false);
  });

  it('matches by name an error from another realm or a bundled copy', () => {
    const foreign = Object.assign(new Error('from elsewhere'), { name: 'TerminalError' });
    expect(isTerminal(new Error('wrap', { cause: foreign }))).toBe(true);
    expect(isTerminal({ name: 'TerminalError', message: 'plain object' })).toBe(true);
  });

  it('terminates on cyclic cause chains', () => {
    const a = new Error('a');
    const b = new Error('b', { cause: a });
    (a as { cause?: unknown }).cause = b;
    expect(isTerminal(a)).toBe(false);
    const self = new Error('self');
    (self as { cause?: unknown }).cause = self;
    expect(isTerminal(self)).toBe(false);
    // A cycle with a TerminalError inside it is still found.
    const t = new TerminalError('t', { cause: a });
    (b as { cause?: unknown }).cause = t;
    expect(isTerminal(a)).toBe(true);
  });

  it('terminates on a very deep chain', () => {
    let e: Error = new Error('root');
    for (let i = 0; i < 5_000; i++) e = new Error(`level ${i}`, { cause: e });
    expect(isTerminal(e)).toBe(false);
  });

  it('looks into AggregateError members and their causes', () => {
    expect(isTerminal(new AggregateError([new Error('x'), new TerminalError('y')], 'many'))).toBe(true);
    expect(isTerminal(new AggregateError([new Error('x'), new Error('z', { cause: new TerminalError('deep') })]))).toBe(true);
    expect(isTerminal(new AggregateError([new Error('x'), new Error('z')]))).toBe(false);
    expect(isTerminal(new Error('wrap', { cause: new AggregateError([new TerminalError('t')]) }))).toBe(true);
    const agg = new AggregateError([]);
    (agg as { errors: unknown[] }).errors.push(agg);
    expect(isTerminal(agg)).toBe(false);
  });
});

describe('describeError', () => {
  it('keeps name, message and stack of an Error', () => {
    const d = describeError(new TypeError('boom'));
    expect(d.name).toBe('TypeError');
    expect(d.message).toBe('boom');
    expect(d.stack).toContain('boom');
  });

  it('truncates long messages and stacks', () => {
    const e = new Error('m'.repeat(10_000));
    e.stack = 's'.repeat(50_000);
    const d = describeError(e);
    expect(d.message.length).toBe(2_000);
    expect(d.stack!.length).toBe(8_000);
    const long = describeError('x'.repeat(9_999));
    expect(long.message.length).toBe(2_000);
    const named = Object.assign(new Error('n'), { name: 'N'.repeat(1_000) });
    expect(describeError(named).name.length).toBe(200);
  });

  it('strips NUL characters (jsonb refuses \\u0000) from name, message and stack', () => {
    const e = new Error('a\u0000b');
    e.name = 'Bad\u0000Name';
    e.stack = 'stack\u0000line';
    const d = describeError(e);
    for (const s of [d.name, d.message, d.stack!]) expect(s).not.toContain('\u0000');
    expect(d.message).toBe('a\uFFFDb');
    expect(describeError('str\u0000ing').message).not.toContain('\u0000');
    // An object's NUL is JSON-escaped into six harmless characters, never a real NUL.
    expect(describeError({ k: 'v\u0000' }).message).not.toContain('\u0000');
  });

  it('describes non-errors as NonError, including unserialisable ones', () => {
    expect(describeError('plain')).toEqual({ name: 'NonError', message: 'plain' });
    expect(describeError({ code: 7 })).toEqual({ name: 'NonError', message: '{"code":7}' });
    expect(describeError(undefined)).toEqual({ name: 'NonError', message: 'undefined' });
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    expect(describeError(cyclic)).toEqual({ name: 'NonError', message: '[object Object]' });
    expect(describeError(10n).name).toBe('NonError');
  });

  it('never throws: a thrown value that cannot be read at all is described by a placeholder', () => {
    // No prototype, so no toString; its toJSON throws: JSON.stringify and String both fail.
    const unreadable = Object.assign(Object.create(null) as object, {
      toJSON() {
        throw new Error('toJSON');
      },
    });
    expect(describeError(unreadable)).toEqual({ name: 'NonError', message: '[a thrown value that could not be read]' });
    const trap = () => {
      throw new Error('trap');
    };
    const hostile = new Proxy(new Error('proxied'), { get: trap, getPrototypeOf: trap });
    expect(describeError(hostile).name).toBe('NonError');
    // A non-string name is stringified, not a reason to lose the message.
    expect(describeError(Object.assign(new Error('m'), { name: 42 }))).toMatchObject({ name: '42', message: 'm' });
  });
});

describe('isTerminal on values that cannot be read', () => {
  it('treats them as not terminal rather than throwing', () => {
    const trap = () => {
      throw new Error('trap');
    };
    expect(isTerminal(new Proxy({}, { get: trap, getPrototypeOf: trap }))).toBe(false);
    const cause = Object.defineProperty(new Error('outer'), 'cause', { get: trap });
    expect(isTerminal(cause)).toBe(false);
    // What can be read is still searched: an unreadable member does not hide a terminal one.
    expect(isTerminal(new AggregateError([new Proxy({}, { get: trap }), new TerminalError('t')]))).toBe(true);
  });
});
