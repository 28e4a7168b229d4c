// OpenTelemetry for a test file: the async-hooks context manager and a tracer provider that
// keeps finished spans in memory, registered globally for the file and reset before each test.

import { context, propagation, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { afterAll, beforeAll, beforeEach } from 'vitest';

/** Registers in-memory tracing for this file; answers the exporter holding the finished spans. */
export function useInMemoryTracing(): InMemorySpanExporter {
  const exporter = new InMemorySpanExporter();
  const contextManager = new AsyncLocalStorageContextManager();
  beforeAll(() => {
    context.setGlobalContextManager(contextManager.enable());
    trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }));
  });
  afterAll(() => {
    trace.disable();
    context.disable();
    propagation.disable();
  });
  beforeEach(() => exporter.reset());
  return exporter;
}
