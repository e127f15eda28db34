/**
 * The not-found grace as numbers: a reference the service does not show is taken as absent only once the grace
 * has run out on the system clock (since the outcome became unknown) and on the process's steady clock (since
 * it first looked at the row), so a step of the system clock or a restart only makes the row wait longer.
 */
import { describe, expect, it } from 'vitest';
import { FirstLooks, notFoundGraceEnd } from '../../src/submit/grace.js';

const GRACE = 60_000;
const T = Date.UTC(2026, 0, 5, 9);

describe('notFoundGraceEnd', () => {
  it('waits until the grace has run out on both clocks; the same end as the system clock alone when they agree', () => {
    const at = (elapsed: number) =>
      notFoundGraceEnd({ graceMs: GRACE, now: T + elapsed, unknownSince: T, steadyNow: 500 + elapsed, steadySince: 500 });
    expect(at(0)).toBe(T + GRACE);
    expect(at(GRACE - 1)).toBe(T + GRACE);
    expect(at(GRACE)).toBeNull();
    expect(at(3 * GRACE)).toBeNull();
  });

  it('a system clock stepped ahead past the grace: waits out the grace on the steady clock', () => {
    const steps = 5 * GRACE;
    const r = { graceMs: GRACE, now: T + 1000 + steps, unknownSince: T, steadyNow: 1000, steadySince: 0 };
    expect(notFoundGraceEnd(r)).toBe(r.now + GRACE - 1000);
    expect(notFoundGraceEnd({ ...r, now: r.now + GRACE - 1000, steadyNow: GRACE })).toBeNull();
  });

  it('a row first looked at after a restart (or by another instance) waits a whole grace on this steady clock', () => {
    const r = { graceMs: GRACE, now: T + 10 * GRACE, unknownSince: T, steadyNow: 7, steadySince: 7 };
    expect(notFoundGraceEnd(r)).toBe(r.now + GRACE);
  });

  it('a system clock stepped back: waits for the end on the system clock', () => {
    const r = { graceMs: GRACE, now: T - 30_000, unknownSince: T, steadyNow: 2 * GRACE, steadySince: 0 };
    expect(notFoundGraceEnd(r)).toBe(T + GRACE);
  });

  it('asks again at a whole millisecond, not before the end, from the fractions a steady clock reads', () => {
    const r = { graceMs: GRACE, now: T, unknownSince: T - GRACE, steadyNow: 1000.25, steadySince: 1000.5 };
    expect(notFoundGraceEnd(r)).toBe(T + GRACE + 1);
    expect(notFoundGraceEnd({ ...r, steadyNow: 1000.75 })).toBe(T + GRACE);
  });

  it('a grace of 0 never waits', () => {
    expect(notFoundGraceEnd({ graceMs: 0, now: T, unknownSince: T, steadyNow: 3, steadySince: 3 })).toBeNull();
  });
});

describe('FirstLooks', () => {
  const setup = () => {
    let steady = 0;
    const looks = new FirstLooks(
      () => steady,
      () => 2 * GRACE,
    );
    return { looks, move: (ms: number) => (steady += ms) };
  };
  const row = { id: 1, createAttempts: 1, unknownSince: T };

  it('keeps the first look at a row while its outcome stays the same unknown one', () => {
    const { looks, move } = setup();
    move(100);
    expect(looks.look(row)).toBe(100);
    move(GRACE);
    expect(looks.look(row)).toBe(100);
  });

  it('starts afresh when the row became unknown again (another create) or was forgotten', () => {
    const { looks, move } = setup();
    looks.look(row);
    move(GRACE);
    expect(looks.look({ ...row, createAttempts: 2, unknownSince: T + GRACE })).toBe(GRACE);
    move(1);
    looks.forget(row.id);
    expect(looks.look(row)).toBe(GRACE + 1);
  });

  it('drops the rows not looked at for forgetAfterMs, keeping those looked at since', () => {
    const { looks, move } = setup();
    looks.look(row);
    looks.look({ ...row, id: 2 });
    move(GRACE);
    looks.look({ ...row, id: 2 });
    move(GRACE + 1);
    looks.sweep();
    expect(looks.size).toBe(1);
    expect(looks.look({ ...row, id: 2 })).toBe(0);
    expect(looks.look(row)).toBe(2 * GRACE + 1);
  });
});
