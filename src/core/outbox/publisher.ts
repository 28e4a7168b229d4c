// The one interface every destination implements. A publish resolves only once the
// destination has acknowledged the message (2xx, broker confirm, JetStream ack); it throws
// PublishError to say whether to retry (and when) or to dead-letter; anything else it throws
// is retried. The relay gives each call a deadline through `signal`.

/** What a publisher is handed: the stored message's fields that travel. */
export interface PublishMessage {
  id: string;
  tenantId: string;
  destination: string;
  topic: string;
  payload: unknown;
  headers: Record<string, string>;
  messageKey: string;
  orderingKey: string | null;
  /** 1 on the first claim; a republish after a lost outcome has a higher one. */
  attempt: number;
}

/** Delivers outbox messages to one destination; webhookPublisher, rabbitmqPublisher and natsPublisher are three, or write your own. */
export interface Publisher {
  /** Resolves when the destination acknowledged the message. */
  publish(message: PublishMessage, signal: AbortSignal): Promise<void>;
  /** Releases connections. Called once, when the relay stops. */
  close(): Promise<void>;
}

/** A failure a publisher classified: `reject` dead-letters at once; `retry` may say when. */
export class PublishError extends Error {
  readonly kind: 'retry' | 'reject';
  /** For `retry`: the earliest retry the destination asked for (e.g. Retry-After). */
  readonly retryAfterMs: number | undefined;
  constructor(kind: 'retry' | 'reject', message: string, options: { retryAfterMs?: number; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'PublishError';
    this.kind = kind;
    this.retryAfterMs = options.retryAfterMs;
  }
}

/** Destination name -> publisher. */
export type PublisherMap = Record<string, Publisher>;
