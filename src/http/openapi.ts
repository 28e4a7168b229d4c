// A thin OpenAPI 3.1 generator over the routes' declarations (openapi-routes.ts): every schema
// in the document comes from zod through z.toJSONSchema, which writes JSON Schema
// 2020-12, the dialect of OpenAPI 3.1. Requests are described by their input side
// (what a client sends, before transforms), responses by their output side.

import { z } from 'zod';
import { type ApiErrorCode, STATUS_BY_CODE } from './errors.ts';
import { errorBodySchema } from './wire-schemas.ts';

/** A JSON Schema or OpenAPI object, as plain JSON. */
export type JsonObject = { [key: string]: unknown };

export interface ResponseDoc {
  description: string;
  schema: z.ZodType;
  /** Default application/json; several when the answer's type depends on what was asked for (the console's files). */
  contentType?: string | readonly string[];
}

/** One route of the app: what it takes and what it answers. */
export interface OperationDoc {
  method: 'get' | 'post' | 'put' | 'patch' | 'delete';
  /** The path as Hono writes it: /api/jobs/:id. */
  path: string;
  operationId: string;
  tag: string;
  summary: string;
  description?: string;
  /** Path parameters: an object schema, one parameter per key. */
  params?: z.ZodObject;
  /** Query parameters: an object schema, one parameter per key. */
  query?: z.ZodObject;
  /** Request headers the route reads: an object schema, one parameter per key. */
  headers?: z.ZodObject;
  /** A JSON request body. */
  body?: { schema: z.ZodType; required: boolean; description?: string };
  /** Successful answers by status. */
  responses: Record<number, ResponseDoc>;
  /** Every error code the route may answer; grouped by STATUS_BY_CODE into error responses. */
  errors: readonly ApiErrorCode[];
  /** Needs the bearer token (when one is configured). */
  bearer: boolean;
}

export interface ApiDoc {
  info: { title: string; version: string; description: string };
  tags: Array<{ name: string; description: string }>;
  /** Named schemas (components/schemas), referenced wherever they occur; responses use their output side. */
  components: Record<string, z.ZodType>;
  /** Named request schemas (input side); names must differ from `components`. */
  requestComponents: Record<string, z.ZodType>;
  operations: readonly OperationDoc[];
  /** Whether the server requires a bearer token: adds the security scheme and 401 answers. */
  bearer: boolean;
}

const REF = '#/components/schemas/';
const INLINE = '~inline';

/**
 * The schemas of one side (input or output), in a registry of their own: named ones become
 * components, the others get a placeholder id and are put back in place after conversion.
 */
class SchemaSet {
  readonly #registry = z.registry<{ id: string }>();
  #emitted: Record<string, JsonObject> | undefined;
  #count = 0;
  readonly #io: 'input' | 'output';
  constructor(io: 'input' | 'output') {
    this.#io = io;
  }

  name(schema: z.ZodType, id: string): void {
    if (this.#registry.has(schema)) throw new Error(`openapi: schema ${id} is registered twice`);
    this.#registry.add(schema, { id });
  }

  /** Registers `schema` (once) and returns a function that gives its JSON once everything is emitted. */
  use(schema: z.ZodType): () => JsonObject {
    const id = this.#registry.get(schema)?.id ?? `${INLINE}${this.#count++}`;
    if (!this.#registry.has(schema)) this.#registry.add(schema, { id });
    return () => {
      const json = this.#emit()[id]!;
      return id.startsWith(INLINE) ? json : { $ref: `${REF}${id}` };
    };
  }

  /** The named schemas, after every use() and before any returned function runs. */
  components(): Record<string, JsonObject> {
    return Object.fromEntries(Object.entries(this.#emit()).filter(([id]) => !id.startsWith(INLINE)));
  }

  #emit(): Record<string, JsonObject> {
    if (this.#emitted) return this.#emitted;
    const { schemas } = z.toJSONSchema(this.#registry, { io: this.#io, uri: (id) => `${REF}${id}` });
    const out: Record<string, JsonObject> = {};
    for (const [id, schema] of Object.entries(schemas)) {
      const { $schema: _s, $id: _i, ...rest } = schema as JsonObject;
      out[id] = rest;
    }
    const text = JSON.stringify(out);
    const dangling = /"\$ref":"#\/components\/schemas\/(~inline\d+)"/.exec(text);
    if (dangling) throw new Error(`openapi: an unnamed schema (${dangling[1]}) is used inside another one; name it in components`);
    this.#emitted = out;
    return out;
  }
}

/** Splits an object schema (input side) into OpenAPI parameters. */
function parameters(where: 'path' | 'query' | 'header', json: JsonObject): JsonObject[] {
  const props = (json.properties ?? {}) as Record<string, JsonObject>;
  const required = new Set((json.required ?? []) as string[]);
  return Object.entries(props).map(([name, { description, ...schema }]) => ({
    name,
    in: where,
    required: where === 'path' || required.has(name),
    ...(description === undefined ? {} : { description }),
    schema,
  }));
}

/**
 * Groups error codes by status: one response per status, the Error component with its
 * `code` narrowed to those codes (JSON Schema's allOf: both must hold).
 */
function errorResponses(codes: readonly ApiErrorCode[], errorBody: () => JsonObject): Record<string, () => JsonObject> {
  const byStatus = new Map<number, ApiErrorCode[]>();
  for (const code of new Set(codes)) {
    const status = STATUS_BY_CODE[code];
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  const out: Record<string, () => JsonObject> = {};
  for (const [status, list] of [...byStatus].sort(([a], [b]) => a - b)) {
    const narrowed = { type: 'object', properties: { error: { type: 'object', properties: { code: { type: 'string', enum: list } } } } };
    out[status] = () => ({
      description: list.join(', '),
      ...(status === 401 ? { headers: { 'WWW-Authenticate': { schema: { const: 'Bearer' } } } } : {}),
      content: { 'application/json': { schema: { allOf: [errorBody(), narrowed] } } },
    });
  }
  return out;
}

/** Hono's /api/jobs/:id as OpenAPI's /api/jobs/{id}. */
export const openApiPath = (honoPath: string): string => honoPath.replace(/:(\w+)/g, '{$1}');

/** Builds the OpenAPI 3.1 document of `api`; throws a plain Error on a malformed route list (a programmer error). */
export function openApiDocument(api: ApiDoc): JsonObject {
  const input = new SchemaSet('input');
  const output = new SchemaSet('output');
  output.name(errorBodySchema, 'Error');
  for (const [id, schema] of Object.entries(api.components)) output.name(schema, id);
  const errorBody = output.use(errorBodySchema);
  for (const [id, schema] of Object.entries(api.requestComponents)) {
    if (id in api.components) throw new Error(`openapi: component ${id} is both a request and a response schema`);
    input.name(schema, id);
  }

  // First every schema is registered, then emitted once per side, then put in place.
  const ops = api.operations.map((op) => {
    const params = op.params && input.use(op.params);
    const query = op.query && input.use(op.query);
    const headers = op.headers && input.use(op.headers);
    const body = op.body && input.use(op.body.schema);
    const ok = Object.entries(op.responses).map(([status, r]) => [status, r, output.use(r.schema)] as const);
    const errors = errorResponses([...op.errors, ...(op.bearer && api.bearer ? ['UNAUTHORIZED' as const] : []), 'INTERNAL'], errorBody);
    return () => ({
      operationId: op.operationId,
      tags: [op.tag],
      summary: op.summary,
      ...(op.description ? { description: op.description } : {}),
      ...(op.bearer && api.bearer ? { security: [{ bearerAuth: [] }] } : {}),
      parameters: [
        ...(params ? parameters('path', params()) : []),
        ...(query ? parameters('query', query()) : []),
        ...(headers ? parameters('header', headers()) : []),
      ],
      ...(body
        ? {
            requestBody: {
              required: op.body!.required,
              ...(op.body!.description ? { description: op.body!.description } : {}),
              content: { 'application/json': { schema: body() } },
            },
          }
        : {}),
      responses: {
        ...Object.fromEntries(
          ok.map(([status, r, schema]) => [
            status,
            {
              description: r.description,
              content: Object.fromEntries([r.contentType ?? 'application/json'].flat().map((type) => [type, { schema: schema() }])),
            },
          ]),
        ),
        ...Object.fromEntries(Object.entries(errors).map(([status, response]) => [status, response()])),
      },
    });
  });

  const paths: Record<string, Record<string, JsonObject>> = {};
  api.operations.forEach((op, i) => {
    const key = openApiPath(op.path);
    paths[key] ??= {};
    const path = paths[key];
    if (path[op.method]) throw new Error(`openapi: ${op.method.toUpperCase()} ${op.path} is declared twice`);
    path[op.method] = ops[i]!();
  });

  return {
    openapi: '3.1.0',
    info: api.info,
    tags: api.tags,
    paths,
    components: {
      schemas: { ...output.components(), ...input.components() },
      ...(api.bearer
        ? { securitySchemes: { bearerAuth: { type: 'http', scheme: 'bearer', description: 'an API key or BATON_API_TOKEN' } } }
        : {}),
    },
  };
}
