/**
 * A corrected result file's notice in words: the outcome a row's note tells (shownOutcome), and a stored
 * `corrected` event read back and told row by row, as the mail and `payoutd status --batch` tell it.
 */
import { describe, expect, it } from 'vitest';
import {
  correctedRowText,
  correctionAdvice,
  correctionNoticeOf,
  correctionRetryText,
  type CorrectedRow,
} from '../../src/domain/correction-notice.js';
import { reportOfNote, serviceReportOf, shownOutcome } from '../../src/domain/service-check.js';

describe('shownOutcome', () => {
  const own = (status: string) => ({ own: status, others: [] });
  const told = [
    { note: 'the payout service now reports PAID for payout PO1, recorded CANCELLED here', report: own('PAID') },
    { note: 'the payout service now reports PENDING for payout PO1, recorded CANCELLED here', report: own('PENDING') },
  ];
  const outcome = (...a: Parameters<typeof shownOutcome>): string => shownOutcome(...a).outcome;

  it('no note: the status the result file shows', () => {
    expect(shownOutcome('CANCELLED', null, told)).toEqual({ outcome: 'CANCELLED', otherPayouts: [] });
  });

  it("a note the service's answer recorded: the status it reported for the row's own payout, the latest of that text", () => {
    expect(outcome('CANCELLED', told[0]?.note as string, told)).toBe('PAID');
    expect(
      outcome('CANCELLED', 'x', [
        { note: 'x', report: own('PAID') },
        { note: 'x', report: own('CANCELLED') },
      ]),
    ).toBe('CANCELLED');
  });

  it("other payouts under the reference, the row's own not contradicted: OTHER_PAYOUTS with them, never another payout's status", () => {
    const second = { payoutId: 'PO2', status: 'PAID', amount: '7.25', currency: 'PHP' };
    expect(shownOutcome('PAID', 'x', [{ note: 'x', report: { own: null, others: [second] } }])).toEqual({
      outcome: 'OTHER_PAYOUTS',
      otherPayouts: [second],
    });
    // The row's own contradicted too: its own payout's status, the others beside it.
    expect(shownOutcome('CANCELLED', 'x', [{ note: 'x', report: { own: 'PAID', others: [second] } }])).toEqual({
      outcome: 'PAID',
      otherPayouts: [second],
    });
  });

  it('a note no answer recorded (payoutd is asking, or no longer can): UNCONFIRMED', () => {
    expect(outcome('PAID', 'a payout.updated event reported CANCELLED …; payoutd is asking the payout service', told)).toBe('UNCONFIRMED');
  });
});

describe("a check's report as its history entry keeps it", () => {
  it('reads the stored JSON; anything else is no report', () => {
    expect(serviceReportOf('{"own":null,"others":[{"payoutId":"PO2","status":"PENDING","amount":"1.5","currency":"PHP"}]}')).toEqual({
      own: null,
      others: [{ payoutId: 'PO2', status: 'PENDING', amount: '1.5', currency: 'PHP' }],
    });
    expect(serviceReportOf(null)).toBeNull();
    expect(serviceReportOf('not json')).toBeNull();
    expect(serviceReportOf('{"own":"PAID"}')).toBeNull();
  });

  it('an entry recorded without one is read from its note: own status and other payouts, no amounts', () => {
    const besides = "under this row's reference besides payout PO1 (recorded PAID): do not send this row again";
    expect(reportOfNote(`the payout service holds payout PO2 (PAID) ${besides}`, 'PAID')).toEqual({
      own: null,
      others: [{ payoutId: 'PO2', status: 'PAID', amount: null, currency: null }],
    });
    expect(
      reportOfNote(
        `the payout service now reports CANCELLED for payout PO1, recorded PAID here; the payout service holds payouts PO2 (PAID), PO3 (PENDING) ${besides}`,
        'CANCELLED',
      ),
    ).toEqual({
      own: 'CANCELLED',
      others: [
        { payoutId: 'PO2', status: 'PAID', amount: null, currency: null },
        { payoutId: 'PO3', status: 'PENDING', amount: null, currency: null },
      ],
    });
    expect(reportOfNote('words payoutd no longer writes', 'PAID')).toEqual({ own: 'PAID', others: [] });
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
        otherPayouts: [],
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
    expect(correctionRetryText(notice, 'B1')).toMatch(/^no retry file is left; earlier retry files/);
  });

  it('a row paid twice names the second payout, its status and amount, and what to do', () => {
    const row = {
      ...data.rows[0],
      status: 'PAID',
      oldOutcome: 'PAID',
      newOutcome: 'OTHER_PAYOUTS',
      otherPayouts: [{ payoutId: 'PO8', status: 'PAID', amount: '1200.00', currency: 'PHP' }],
    };
    const notice = correctionNoticeOf({ ...data, rows: [row] });
    expect(notice.rows.map(correctedRowText)).toEqual([
      'line 7 INV-7 (payout PO7): PAID in the result file; now OTHER_PAYOUTS (told before: PAID); 1200.00 PHP; ' +
        'a second payout under this reference: PO8 PAID, 1200.00 PHP; the reference is paid twice: ' +
        "do not book it as this row's payment, and do not send this row again; check it with the payout service before booking the row",
    ]);
    expect(correctionAdvice(notice)).toContain("OTHER_PAYOUTS: the payout service does not contradict the row's own payout");
    // A second payout still PENDING, or one whose amount could not be read: named as known, not yet paid twice.
    const pending = { ...row, otherPayouts: [{ payoutId: 'PO8', status: 'PENDING', amount: null, currency: null }] };
    expect(correctedRowText(correctionNoticeOf({ ...data, rows: [pending] }).rows[0] as CorrectedRow)).toContain(
      "a second payout under this reference: PO8 PENDING: do not book it as this row's payment",
    );
  });

  it('a correction that left the retry files alone says nothing of them; damaged fields read as empty', () => {
    const { retryFile: _r, ...rest } = data;
    expect(correctionRetryText(correctionNoticeOf(rest), 'B1')).toBeNull();
    // A retry file that could not be written is said, with the command that writes one.
    const failed = correctionNoticeOf({ ...data, retryFileError: 'RETRY_FILE_NOT_WRITTEN' });
    expect(correctionRetryText(failed, 'B1')).toMatch(/^the retry file of this correction could not be written/);
    expect(correctionRetryText(failed, 'B1')).toContain('payoutd retry-file --batch B1');
    expect(correctionNoticeOf({ rows: [null, 'x', { line: 'two' }] }).rows).toHaveLength(1);
  });
});
