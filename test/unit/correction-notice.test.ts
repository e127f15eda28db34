/**
 * A corrected result file's notice in words: the outcome a row's note tells (shownOutcome), and a stored
 * `corrected` event read back and told row by row, as the mail and `payoutd status --batch` tell it.
 */
import { describe, expect, it } from 'vitest';
import { correctedRowText, correctionAdvice, correctionNoticeOf, correctionRetryText } from '../../src/domain/correction-notice.js';
import { shownOutcome } from '../../src/domain/service-check.js';

describe('shownOutcome', () => {
  const told = [
    { note: 'the payout service now reports PAID for payout PO1, recorded CANCELLED here', status: 'PAID' },
    { note: 'the payout service now reports PENDING for payout PO1, recorded CANCELLED here', status: 'PENDING' },
  ];

  it('no note: the status the result file shows', () => {
    expect(shownOutcome('CANCELLED', null, told)).toBe('CANCELLED');
  });

  it("a note the service's answer recorded: the status it reported, the latest of that text", () => {
    expect(shownOutcome('CANCELLED', told[0]?.note as string, told)).toBe('PAID');
    expect(
      shownOutcome('CANCELLED', 'x', [
        { note: 'x', status: 'PAID' },
        { note: 'x', status: 'CANCELLED' },
      ]),
    ).toBe('CANCELLED');
  });

  it('a note no answer recorded (payoutd is asking, or no longer can): UNCONFIRMED', () => {
    expect(shownOutcome('PAID', 'a payout.updated event reported CANCELLED …; payoutd is asking the payout service', told)).toBe(
      'UNCONFIRMED',
    );
  });
});

describe('a stored corrected event in words', () => {
  const data = {
    correction: 2,
    correctionFile: 'B1_pay.csv.result.corrected-2.csv',
    supersedes: 'B1_pay.csv.result.corrected-1.csv',
    columns: { reason: 'O', correction: 'Q' },
    rowsChanged: 1,
    rows: [
      {
        line: 7,
        merchantReferenceId: 'INV-7',
        payoutId: 'PO7',
        status: 'PAID',
        oldOutcome: 'UNCONFIRMED',
        newOutcome: 'CANCELLED',
        payoutAmount: '1200.00',
        payoutCurrency: 'PHP',
        deductionAmount: null,
        deductionCurrency: null,
      },
    ],
    retryFile: null,
  };

  it('names the row, its line, its status, its outcome before and now, and its amounts as written', () => {
    const notice = correctionNoticeOf(data);
    expect(notice.rows.map(correctedRowText)).toEqual([
      'line 7 INV-7 (payout PO7): PAID in the result file; now CANCELLED (told before: UNCONFIRMED); 1200.00 PHP',
    ]);
    expect(correctionAdvice(notice)).toContain(
      'Book B1_pay.csv.result.corrected-2.csv as a correction of B1_pay.csv.result.corrected-1.csv, not as a new result',
    );
    expect(correctionAdvice(notice)).toContain('column O "reason"');
    expect(correctionAdvice(notice)).toContain('column Q "correction"');
    expect(correctionRetryText(notice)).toMatch(/^no retry file is left; earlier retry files/);
  });

  it('a correction that left the retry files alone says nothing of them; damaged fields read as empty', () => {
    const { retryFile: _r, ...rest } = data;
    expect(correctionRetryText(correctionNoticeOf(rest))).toBeNull();
    expect(correctionNoticeOf({ rows: [null, 'x', { line: 'two' }] }).rows).toHaveLength(1);
  });
});
