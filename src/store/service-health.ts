/**
 * What each instance last knew of the payout service's reachability (src/api/breaker.ts), so that `payoutd
 * status`, a separate process, can say the service is down and since when.
 */
import type { ServiceHealth, ServiceState } from '../domain/service-health.js';
import type { Database } from './db.js';

export interface ServiceHealthRecord extends ServiceHealth {
  instanceId: string;
  service: string;
  /** When the instance last wrote the row (a transition, or a refresh while it runs). */
  updatedAt: number;
}

export async function recordServiceHealth(db: Database, r: ServiceHealthRecord): Promise<void> {
  await db('service_health')
    .insert({
      instance_id: r.instanceId,
      service: r.service,
      state: r.state,
      since: r.since,
      last_error_code: r.lastErrorCode,
      updated_at: r.updatedAt,
    })
    .onConflict(['instance_id', 'service'])
    .merge(['state', 'since', 'last_error_code', 'updated_at']);
}

/** Per service, the row written last (by whichever instance): the freshest word on it. */
export async function latestServiceHealth(db: Database): Promise<ServiceHealthRecord[]> {
  const rows = (await db('service_health').orderBy([{ column: 'updated_at', order: 'desc' }, { column: 'instance_id' }])) as Record<
    string,
    unknown
  >[];
  const latest = new Map<string, ServiceHealthRecord>();
  for (const r of rows) {
    const service = r.service as string;
    if (latest.has(service)) continue;
    latest.set(service, {
      instanceId: r.instance_id as string,
      service,
      state: r.state as ServiceState,
      since: Number(r.since),
      lastErrorCode: (r.last_error_code as string | null) ?? null,
      updatedAt: Number(r.updated_at),
    });
  }
  return [...latest.values()];
}

/** Forgets an instance's rows (it stops), or every row (an instance alone on its database starts). */
export async function forgetServiceHealth(db: Database, instanceId?: string): Promise<void> {
  const q = db('service_health');
  if (instanceId !== undefined) q.where({ instance_id: instanceId });
  await q.delete();
}
