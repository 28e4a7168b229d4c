// baton_auth_failures_total{reason}: requests refused 401, by why (auth.ts). Every reason is
// exported from the start at 0, so a rate() over it works before the first failure.

import { Counter, type Registry } from 'prom-client';
import { AUTH_FAILURE_REASONS } from './auth.ts';

export function registerAuthMetrics(registry: Registry) {
  const failures = new Counter({
    name: 'baton_auth_failures_total',
    help: 'Requests refused 401 by this process, by reason (missing, malformed, bad_token, unknown_key, bad_secret, revoked)',
    labelNames: ['reason'] as const,
    registers: [registry],
  });
  for (const reason of AUTH_FAILURE_REASONS) failures.inc({ reason }, 0);
  return failures;
}
