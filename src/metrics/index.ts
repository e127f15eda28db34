/** Prometheus metrics, /healthz and /readyz. */
export { PayoutdMetrics, type MetricsSources } from './metrics.js';
