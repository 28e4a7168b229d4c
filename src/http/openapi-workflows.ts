// The /api/workflows routes as the OpenAPI document describes them (one entry per
// route of routes/workflows.ts). Built by openapi-routes.ts, which lends its helpers.

import type { z } from 'zod';
import type { ApiErrorCode } from './errors.ts';
import type { OperationDoc, ResponseDoc } from './openapi.ts';
import {
  listRunsQuerySchema,
  workflowResponseSchemas as r,
  runEventParamSchema,
  runIdParamSchema,
  sendEventBodySchema,
  startRunBodySchema,
  wireRunSchema,
  wireRunSummarySchema,
  workflowNameParamSchema,
} from './workflow-schemas.ts';

export interface OperationHelpers {
  route: (o: Omit<OperationDoc, 'bearer'>) => OperationDoc;
  json: (description: string, schema: z.ZodType) => ResponseDoc;
  noBody: NonNullable<OperationDoc['body']>;
  BODY: readonly ApiErrorCode[];
  ENGINE: readonly ApiErrorCode[];
}

export const WORKFLOW_TAG = { name: 'workflows', description: 'durable workflow runs: start, read, list, cancel, replay, events' };
export const WORKFLOW_COMPONENTS = { WorkflowRun: wireRunSchema, WorkflowRunSummary: wireRunSummarySchema };

export function workflowOperations({ route, json, noBody, BODY, ENGINE }: OperationHelpers): OperationDoc[] {
  const action = (verb: 'cancel' | 'replay', operationId: string, summary: string, description: string) =>
    route({
      method: 'post',
      path: `/api/workflows/runs/:id/${verb}`,
      operationId,
      tag: 'workflows',
      summary,
      description,
      params: runIdParamSchema,
      body: noBody,
      responses: { 200: json('the run as the action left it', wireRunSummarySchema) },
      errors: ['RUN_NOT_FOUND', 'RUN_STATE_CONFLICT', ...BODY, ...ENGINE],
    });
  return [
    route({
      method: 'post',
      path: '/api/workflows/:name/runs',
      operationId: 'startWorkflowRun',
      tag: 'workflows',
      summary: 'Start a run of a workflow',
      description:
        '201 with the new run; 200 with the existing one when (tenantId, idempotencyKey) already exists. 404 WORKFLOW_NOT_FOUND when the server process defines no workflow of that name.',
      params: workflowNameParamSchema,
      body: { schema: startRunBodySchema, required: true },
      responses: { 201: json('started', r.started), 200: json('a run with this idempotency key already exists', r.started) },
      errors: ['WORKFLOW_NOT_FOUND', ...BODY, ...ENGINE],
    }),
    route({
      method: 'get',
      path: '/api/workflows/runs',
      operationId: 'listWorkflowRuns',
      tag: 'workflows',
      summary: 'List runs, newest first',
      description: 'Unknown parameters are refused (400). The next page starts at offset + runs.length.',
      query: listRunsQuerySchema,
      responses: { 200: json('a page of runs', r.runPage) },
      errors: ENGINE,
    }),
    route({
      method: 'get',
      path: '/api/workflows/runs/:id',
      operationId: 'getWorkflowRun',
      tag: 'workflows',
      summary: 'Read a run: state, input, output, failure chain and every step with its status, attempts, timings and output',
      params: runIdParamSchema,
      responses: { 200: json('the run', wireRunSchema) },
      errors: ['RUN_NOT_FOUND', ...ENGINE],
    }),
    action('cancel', 'cancelWorkflowRun', 'Cancel a run', '409 unless the run is running, sleeping or waiting.'),
    action(
      'replay',
      'replayWorkflowRun',
      'Replay a dead-lettered or cancelled run',
      'Resumes at the step it stopped at (completed steps keep their outputs), replayCount + 1; 409 otherwise.',
    ),
    route({
      method: 'post',
      path: '/api/workflows/runs/:id/events/:name',
      operationId: 'sendWorkflowEvent',
      tag: 'workflows',
      summary: 'Send a run an event',
      description:
        'Kept until a wait for this name takes it (also when the run is not waiting yet). 201 for a new event, 200 when its idempotency key was seen for this run; 409 when the run has succeeded or was cancelled.',
      params: runEventParamSchema,
      body: { schema: sendEventBodySchema, required: true },
      responses: { 201: json('stored', r.event), 200: json('absorbed: the idempotency key was seen', r.event) },
      errors: ['RUN_NOT_FOUND', 'RUN_STATE_CONFLICT', ...BODY, ...ENGINE],
    }),
  ];
}
