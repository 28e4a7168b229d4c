// Producer over Baton's HTTP API (POST /api/jobs) with one undici keep-alive pool:
// measures the daemon's enqueue path as an HTTP client sees it.

import { Pool } from 'undici';
import { JOB_TYPE, type ProducerSide, QUEUE } from './types.ts';

export function batonHttpProducer(base: string): ProducerSide {
  const url = new URL(base);
  const pool = new Pool(url.origin, { connections: 8, keepAliveTimeout: 60_000, pipelining: 1 });
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (process.env.BATON_API_TOKEN) headers.authorization = `Bearer ${process.env.BATON_API_TOKEN}`;
  return {
    async open() {
      const r = await pool.request({ path: '/healthz', method: 'GET' });
      await r.body.dump();
    },
    async enqueue(seq) {
      const r = await pool.request({
        path: '/api/jobs',
        method: 'POST',
        headers,
        body: JSON.stringify({ jobType: JOB_TYPE, queue: QUEUE, payload: { seq } }),
      });
      const text = await r.body.text();
      if (r.statusCode !== 201) throw new Error(`POST /api/jobs -> ${r.statusCode}: ${text.slice(0, 200)}`);
    },
    async close() {
      await pool.close();
    },
  };
}
