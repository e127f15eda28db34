/** `payoutd rates` and `payoutd balance`: the configured merchant's view of the service. */
import type { Logger } from 'pino';
import { systemClock } from '../../domain/clock.js';
import type { ResolvedConfig } from '../../config/index.js';
import { connectApi } from '../../daemon/services.js';
import { print, table } from '../output.js';

export async function showRates(config: ResolvedConfig, logger: Logger, currencies: string[], json: boolean): Promise<void> {
  const api = await connectApi(config, systemClock, logger);
  try {
    const rates = await api.client.exchangeRates(currencies.map((c) => c.toUpperCase()));
    if (json) print(JSON.stringify({ exchangeRates: rates }, null, 2));
    else {
      print(
        table(
          ['SOURCE', 'TARGET', 'RATE', 'AS OF', 'ID'],
          rates.map((r) => [r.sourceCurrency, r.targetCurrency, r.rate, r.rateTime, r.id]),
        ),
      );
      print('\nIndicative only: the rate applied is the one the create returns.');
    }
  } finally {
    await api.close();
  }
}

export async function showBalance(config: ResolvedConfig, logger: Logger, json: boolean): Promise<void> {
  const api = await connectApi(config, systemClock, logger);
  try {
    const balances = await api.client.balances();
    if (json) print(JSON.stringify({ balances }, null, 2));
    else
      print(
        table(
          ['CURRENCY', 'AVAILABLE'],
          balances.map((b) => [b.currency, b.available]),
        ),
      );
  } finally {
    await api.close();
  }
}
