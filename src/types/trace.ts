// The trace context a job carries from its producer to its handler's span (migration 0008).

/** A W3C trace context (https://www.w3.org/TR/trace-context/), as stored with a job. */
export interface TraceCarrier {
  traceparent: string;
  tracestate?: string;
}
