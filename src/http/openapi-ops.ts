// The operational routes as the OpenAPI document describes them (one entry per route of
// routes/ops.ts): health, readiness, metrics, the document itself, the console's page and
// files. Built by openapi-routes.ts, which lends its helpers.

import { z } from 'zod';
import { CONSOLE_ASSETS } from './console-files.ts';
import type { ApiErrorCode } from './errors.ts';
import type { OperationDoc, ResponseDoc } from './openapi.ts';
import { responseSchemas as r } from './wire-schemas.ts';

/** What openapi-routes.ts lends the tables not yet declared with their routes. */
export interface OperationHelpers {
  route: (o: Omit<OperationDoc, 'bearer'>) => OperationDoc;
  json: (description: string, schema: z.ZodType) => ResponseDoc;
  noBody: NonNullable<OperationDoc['body']>;
  BODY: readonly ApiErrorCode[];
  ENGINE: readonly ApiErrorCode[];
}

export const OPS_TAG = { name: 'operations', description: 'health, readiness, metrics, this document, the console' };

export function opsOperations({ route, json }: OperationHelpers): OperationDoc[] {
  return [
    route({
      method: 'get',
      path: '/healthz',
      operationId: 'health',
      tag: 'operations',
      summary: 'Liveness: the process is up',
      description: 'Open, and answers whatever the Host.',
      responses: { 200: json('up', r.health) },
      errors: [],
    }),
    route({
      method: 'get',
      path: '/readyz',
      operationId: 'ready',
      tag: 'operations',
      summary: 'Readiness: the database answers within 2 s and the engine has started',
      description: 'Open, and answers whatever the Host. 503 NOT_READY carries `details: { db, started }`.',
      responses: { 200: json('ready', r.ready) },
      errors: ['NOT_READY'],
    }),
    route({
      method: 'get',
      path: '/metrics',
      operationId: 'metrics',
      tag: 'operations',
      summary: 'Prometheus metrics',
      description: '404 when the server runs without metrics.',
      responses: { 200: { description: 'Prometheus text format', schema: r.text, contentType: 'text/plain' } },
      errors: ['ROUTE_NOT_FOUND'],
    }),
    route({
      method: 'get',
      path: '/openapi.json',
      operationId: 'openapi',
      tag: 'operations',
      summary: 'This document',
      description: 'Open like the console page: it describes the API and holds no data.',
      responses: { 200: json('the OpenAPI 3.1 document', r.openapi) },
      errors: [],
    }),
    route({
      method: 'get',
      path: '/',
      operationId: 'console',
      tag: 'operations',
      summary: 'The admin console page',
      description: 'Open: the page holds no data and sends the token on its API calls. 404 when the page is not installed.',
      responses: {
        200: { description: 'the HTML page; it loads its stylesheet and scripts from /console/', schema: r.text, contentType: 'text/html' },
      },
      errors: ['ROUTE_NOT_FOUND'],
    }),
    route({
      method: 'get',
      path: '/console/:file',
      operationId: 'consoleFile',
      tag: 'operations',
      summary: 'A stylesheet or ES module of the admin console',
      description: 'Open like the console page. Only the files the page loads are served; any other name is 404.',
      params: z.object({ file: z.enum([...CONSOLE_ASSETS.keys()]) }),
      responses: { 200: { description: 'the file', schema: r.text, contentType: ['text/javascript', 'text/css'] } },
      errors: ['ROUTE_NOT_FOUND'],
    }),
  ];
}
