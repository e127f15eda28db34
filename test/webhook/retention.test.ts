/**
 * Remembered eventIds do not pile up for the life of the daemon: once
 * older than `eventRetentionDays` they are forgotten (checked at most
 * hourly, when events arrive), while recent ones still catch duplicates.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { closeAll, eventBody, send, signedHeaders, startReceiver, type Harness } from './helpers.js';

afterEach(closeAll);

const DAY = 86_400_000;

function deliver(h: Harness, eventId: string) {
  const body = eventBody({ eventId });
  return send(h.url, { headers: signedHeaders(body, h.clock), body });
}

async function rememberedIds(h: Harness): Promise<string[]> {
  return ((await h.db('webhook_events').orderBy('event_id').pluck('event_id')) as string[]).sort();
}

describe('webhook event retention', () => {
  it('forgets eventIds past the retention and still drops recent duplicates', async () => {
    const h = await startReceiver({ eventRetentionDays: 2 });
    expect((await deliver(h, 'EV-old')).status).toBe(200);
    h.clock.advance(DAY);
    expect((await deliver(h, 'EV-mid')).status).toBe(200);
    expect(await rememberedIds(h)).toEqual(['EV-mid', 'EV-old']);

    // 2.5 days after the first: only EV-old is past the 2-day retention.
    h.clock.advance(1.5 * DAY);
    expect((await deliver(h, 'EV-new')).status).toBe(200);
    expect(await rememberedIds(h)).toEqual(['EV-mid', 'EV-new']);

    // A recent id is still a duplicate; a forgotten one is taken as new (it only makes a payout due for a query).
    expect((await deliver(h, 'EV-mid')).status).toBe(200);
    expect((await deliver(h, 'EV-old')).status).toBe(200);
    expect(h.verdicts).toEqual(['accepted', 'accepted', 'accepted', 'duplicate', 'accepted']);
  });

  it('looks for old ids at most hourly', async () => {
    const h = await startReceiver({ eventRetentionDays: 1 });
    expect((await deliver(h, 'EV-a')).status).toBe(200);
    h.clock.advance(DAY - 1000);
    expect((await deliver(h, 'EV-b')).status).toBe(200);
    // EV-a is now past the retention, but the last look was under an hour ago.
    h.clock.advance(2000);
    expect((await deliver(h, 'EV-c')).status).toBe(200);
    expect(await rememberedIds(h)).toEqual(['EV-a', 'EV-b', 'EV-c']);
    h.clock.advance(3_600_000);
    expect((await deliver(h, 'EV-d')).status).toBe(200);
    expect(await rememberedIds(h)).toEqual(['EV-b', 'EV-c', 'EV-d']);
  });

  it('refuses a retention that is not a whole number of days', async () => {
    await expect(startReceiver({ eventRetentionDays: 0.5 })).rejects.toThrow(
      'Expected `webhook.eventRetentionDays` to be an integer from 1 and up, got 0.5 (number)',
    );
  });
});
