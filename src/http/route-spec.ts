// One declaration per route: method, path, request schemas, successes and every error code.
// `routes().add` makes the router's handler chain and the typed client's per-status types from it, and
// openapi-routes.ts the route's OpenAPI entry, so neither can drift from the other.

import { zValidator } from '@hono/zod-validator';
import { type Handler, Hono, type ValidationTargets } from 'hono';
import type { BlankInput, BlankSchema, Schema, ToSchema, TypedResponse } from 'hono/types';
import type { InferInput } from 'hono/validator';
import { z } from 'zod';
import type { AppEnv } from './context.ts';
import type { ApiErrorCode } from './errors.ts';
import { validationHook } from './errors.ts';
import { jsonBody, MAX_JSON_DEPTH_DEFAULT, noBody } from './json-body.ts';
import type { OperationDoc, ResponseDoc } from './openapi.ts';
import { type ErrorResponse, fails } from './route-errors.ts';

/**
 * A route of the HTTP API, declared once; `defineRoute` keeps its literal types. Its path is the
 * full one as Hono writes it (/api/keys/:id/revoke): the resource's app is mounted at '/'.
 */
export interface RouteSpec extends Omit<OperationDoc, 'body' | 'errors' | 'bearer'> {
  /**
   * 'none': a JSON-typed POST whose body must be empty or {} (json-body.ts noBody); a schema: a
   * checked JSON body (jsonBody) validated by it.
   */
  body?: 'none' | { schema: z.ZodType; required: true; description?: string };
  /**
   * Every error code the route answers, the edge's included (Host check, token, same-origin,
   * body limit, admin-only, tenant naming): they type the client's answers, and the document
   * checks them against what app.ts puts in front of the path.
   */
  errors: readonly ApiErrorCode[];
  /**
   * Request parts the document shows but the route does not validate, as its handler reads them
   * leniently (an invalid traceparent is ignored, not refused): they stay out of the client's input.
   */
  lenient?: Pick<OperationDoc, 'params' | 'headers'>;
}

/** A resource folder's declarations, as the OpenAPI document lists them: its tag, its named schemas, its routes. */
export interface ResourceApi {
  tag: { name: string; description: string };
  components?: Record<string, z.ZodType>;
  /** Named request schemas (their input side), e.g. a job spec. */
  requestComponents?: Record<string, z.ZodType>;
  routes: readonly RouteSpec[];
}

export const defineRoute = <const D extends RouteSpec>(spec: D): D => spec;

/** A JSON answer of the document. */
export const json = (description: string, schema: z.ZodType): ResponseDoc => ({ description, schema });

/** How the document shows a body that must be empty or {}. */
export const NO_BODY_DOC = {
  schema: z.strictObject({}),
  required: false,
  description: 'none, or {}; the Content-Type must still be application/json',
} as const;

// What zValidator adds to a route's input (its DefaultInput), so the client sees the same types.
type HasUndefined<T> = undefined extends T ? true : false;
type Validated<Target extends keyof ValidationTargets, S> = S extends z.ZodType
  ? {
      in: HasUndefined<z.input<S>> extends true
        ? { [K in Target]?: [z.input<S>] extends [ValidationTargets[K]] ? z.input<S> : InferInput<z.input<S>, K> }
        : { [K in Target]: [z.input<S>] extends [ValidationTargets[K]] ? z.input<S> : InferInput<z.input<S>, K> };
      out: { [K in Target]: z.output<S> };
    }
  : BlankInput;
type BodySchema<D extends RouteSpec> = D['body'] extends { schema: infer S } ? S : undefined;
/** The validated input of a declared route: its path parameters, query, headers and JSON body. */
export type InputOf<D extends RouteSpec> = Validated<'param', D['params']> &
  Validated<'query', D['query']> &
  Validated<'header', D['headers']> &
  Validated<'json', BodySchema<D>>;

// Hono's own (unexported) MergeTypedResponse: how a handler's return becomes the route's answers.
type Answer<T> =
  T extends Promise<void>
    ? T
    : T extends Promise<infer T2>
      ? T2 extends TypedResponse
        ? T2
        : TypedResponse
      : T extends TypedResponse
        ? T
        : TypedResponse;

/** The app's schema after a declared route: its input, its handler's answers and one error answer per declared code. */
export type WithRoute<S extends Schema, D extends RouteSpec, R> = S &
  ToSchema<D['method'], D['path'], InputOf<D>, Answer<R> | ErrorResponse<D['errors'][number]>>;

type Answers = Response | TypedResponse | Promise<Response | TypedResponse>;

/** A resource's routes being declared: `add` one route at a time, then mount `app` in app.ts. */
export interface Routes<S extends Schema> {
  readonly app: Hono<AppEnv, S, '/'>;
  add<const D extends RouteSpec, R extends Answers>(
    spec: D,
    handler: Handler<AppEnv, D['path'], InputOf<D>, R>,
  ): Routes<WithRoute<S, D, R>>;
}

export interface RoutesOptions {
  /** Deepest JSON nesting of a body (AppOptions.maxJsonDepth). */
  maxJsonDepth?: number;
}

/**
 * A new resource app whose routes are added from their declarations: `fails(...)` first
 * (carrying the declaration, for the document and its tests), the body check, the validators
 * of the parameters, query, headers and body, in that order, then the handler.
 */
export function routes(opts: RoutesOptions = {}): Routes<BlankSchema> {
  const app = new Hono<AppEnv>();
  const builder: Routes<Schema> = {
    app,
    add(spec, handler) {
      const chain: unknown[] = [Object.assign(fails(...spec.errors), { spec })];
      if (spec.body === 'none') chain.push(noBody());
      else if (spec.body) chain.push(jsonBody(opts.maxJsonDepth ?? MAX_JSON_DEPTH_DEFAULT));
      if (spec.params) chain.push(zValidator('param', spec.params, validationHook));
      if (spec.query) chain.push(zValidator('query', spec.query, validationHook));
      if (spec.headers) chain.push(zValidator('header', spec.headers, validationHook));
      if (spec.body && spec.body !== 'none') chain.push(zValidator('json', spec.body.schema, validationHook));
      // The types are what Hono's overloads compute for the same chain; at run time it is one `on`.
      app.on(spec.method.toUpperCase(), spec.path, ...(chain as [Handler]), handler as Handler);
      return builder as never;
    },
  };
  return builder as never;
}
