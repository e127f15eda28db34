/** Prometheus metrics, /healthz and /readyz. */
export { PayoutdMetrics } from './metrics.js';
