// The `baton` CLI: serve | migrate | enqueue | cancel | workflow | cron | keys | bench, each with --help.
// Reads process.env once (here), parses flags, builds the pino logger, and maps
// failures to exit codes: 0 ok, 1 runtime failure, 2 bad configuration or usage.

import { readFile } from 'node:fs/promises';
import { type Logger as PinoLogger, pino } from 'pino';
import { ConfigError, type DaemonConfig, loadConfig } from './env.ts';
import { parseFlags, settingsHelp } from './flags.ts';
import { PlainError } from './plain-error.ts';
import type { Command } from './settings.ts';
import { EXIT_CONFIG, EXIT_FAILED } from './shutdown.ts';

const USAGE = `Usage: baton <command> [flags]

Commands:
  serve     run the daemon: HTTP API, admin console at /, workers
  migrate   create or update the database schema, then exit
  enqueue   enqueue one job from the shell, print it as JSON, exit
  cancel    cancel a job, or ask a running one to stop; print it as JSON, exit
  workflow  start a run of a workflow by name, print it as JSON, exit
  cron      list schedules, or preview an expression's next fire times
  keys      create, list or revoke API keys (docs/security.md)
  bench     run the benchmark harness (bench/main.ts)

Run "baton <command> --help" for the flags of a command, "baton --version" (or -v)
for the version. Every setting is an environment variable and a flag (the flag wins);
a command reads, and accepts flags for, only the settings it uses.
Exit codes: 0 ok, 1 failure, 2 bad configuration or usage.`;

/**
 * Flags of `baton enqueue` beyond its settings (kept here so --help needs no heavy
 * imports). Its --max-attempts is the setting BATON_MAX_ATTEMPTS: for one job, the
 * default budget and the job's are the same number.
 */
const ENQUEUE_FLAGS = {
  type: { type: 'string' },
  payload: { type: 'string' },
  queue: { type: 'string' },
  tenant: { type: 'string' },
  priority: { type: 'string' },
  'delay-ms': { type: 'string' },
  'idempotency-key': { type: 'string' },
} as const;

/** Flags of `baton workflow start` beyond its settings. */
const WORKFLOW_FLAGS = {
  name: { type: 'string' },
  input: { type: 'string' },
  tenant: { type: 'string' },
  'idempotency-key': { type: 'string' },
  debounce: { type: 'string' },
  throttle: { type: 'string' },
} as const;
const WORKFLOW_SUBCOMMANDS = ['start'] as const;

/** Flags of `baton cron list|preview` beyond its settings. */
const CRON_FLAGS = {
  tenant: { type: 'string' },
  limit: { type: 'string' },
  cron: { type: 'string' },
  timezone: { type: 'string' },
  count: { type: 'string' },
  from: { type: 'string' },
} as const;
const CRON_SUBCOMMANDS = ['list', 'preview'] as const;

/** Flags of `baton keys create|list|revoke` beyond its settings. */
const KEYS_FLAGS = {
  tenant: { type: 'string' },
  role: { type: 'string' },
  name: { type: 'string' },
  all: { type: 'boolean' },
} as const;
const KEYS_SUBCOMMANDS = ['create', 'list', 'revoke'] as const;

const HELP: Record<Command, string> = {
  serve: `Usage: baton serve [flags]

Starts the daemon. With DATABASE_URL unset it runs an embedded PostgreSQL whose
data persists in BATON_DATA_DIR. SIGTERM/SIGINT: stop accepting HTTP, let
in-flight jobs finish (up to BATON_DRAIN_MS), stop. Signals within 2 s of the
first are the same request; one later than that forces exit (code 130).

Settings (flag, environment variable, [default]):
${settingsHelp('serve')}`,
  migrate: `Usage: baton migrate [flags]

Applies pending migrations to BATON_SCHEMA and prints {"schema","applied"}.
Safe to run while daemons are running. Uses the same database settings as serve.

Settings (flag, environment variable, [default]):
${settingsHelp('migrate')}`,
  enqueue: `Usage: baton enqueue --type JOB_TYPE [--payload JSON] [flags]

Enqueues one job directly in the database and prints {"created","job","warnings"} as JSON.
A running daemon picks it up at once (NOTIFY). Uses the database settings of
serve; with DATABASE_URL unset it attaches to the embedded PostgreSQL of a
running daemon (or starts it for the moment).

  --type TYPE              job type (required), e.g. noop, sleep, boom, poison
  --payload JSON           payload, default {}
  --queue NAME             default "default"
  --tenant ID              tenant id
  --priority N             higher runs first, default 0
  --delay-ms N             run no earlier than now + N ms (database clock)
  --max-attempts N         attempt budget including the first run (BATON_MAX_ATTEMPTS below)
  --idempotency-key KEY    a second enqueue with the same key returns the first job

Example:
  baton enqueue --type sleep --payload '{"ms":2000}' --queue default

Settings (flag, environment variable, [default]):
${settingsHelp('enqueue')}`,
  cancel: `Usage: baton cancel JOB_ID [flags]

Cancels a pending or waiting job at once, or asks a leased or running one to stop:
its handler's signal is aborted at once (NOTIFY) or at its worker's next heartbeat,
and it ends cancelled if the handler stops, succeeded if it finishes anyway (the
request kept beside it); it is never retried. Prints {"job","cancelRequested"}.
A finished job (exit 1, JOB_STATE_CONFLICT) or an unknown one (exit 1,
JOB_NOT_FOUND) is left alone. Reaches the database like enqueue.

Settings (flag, environment variable, [default]):
${settingsHelp('cancel')}`,
  workflow: `Usage: baton workflow start --name NAME [--input JSON] [flags]

Starts a run of workflow NAME and prints {"run","duplicate"} (and "collapsedBy" when
a debounce or throttle folded or dropped the start). The workflow need not
be defined here: any workflow an engine registered when it started (the registry of
defined workflows) can be started; the run's driving job goes on the workflow's queue,
for a worker that defines it. A name no process ever registered is refused (exit 1,
WORKFLOW_NOT_FOUND). Reaches the database like enqueue.

Flags:
  --name NAME              the workflow
  --input JSON             the run's input (default null)
  --tenant ID              the run's tenant (default "default")
  --idempotency-key KEY    a second start with the same key returns the first run
  --debounce JSON          debounce by key, e.g. '{"key":"user:42","windowMs":5000}'
                           (mode, maxWaitMs as in docs/debounce.md)
  --throttle JSON          throttle by key, e.g. '{"key":"acme","windowMs":60000,"limit":2}'

Example:
  baton workflow start --name place-order --input '{"sku":"A1"}' --idempotency-key o-1

Settings (flag, environment variable, [default]):
${settingsHelp('workflow')}`,
  cron: `Usage: baton cron list [--tenant ID] [--limit N] [flags]
       baton cron preview --cron EXPR --timezone ZONE [--count N] [--from INSTANT]

list     prints {"schedules":[...]}: every schedule (of one tenant with --tenant), with
         its next fire time, last fired occurrence, status and disabled reason
         (--limit, default 100, at most 1000). Reaches the database like enqueue.
preview  prints {"cron","timezone","fires":[{"utc","local"}]}: the next --count
         (default 10, at most 100) fire instants of EXPR in the IANA zone ZONE after
         --from (an ISO 8601 instant with Z or an offset; default now), computed here
         without a database.

Example:
  baton cron preview --cron '30 1 * * *' --timezone Europe/London --count 3

Settings (flag, environment variable, [default]):
${settingsHelp('cron')}`,
  keys: `Usage: baton keys create --tenant ID [--name TEXT]
       baton keys create --role admin [--name TEXT]
       baton keys list [--tenant ID] [--all]
       baton keys revoke KEY_ID

create  makes an API key and prints {"key","token"}: the token (bk_<id>_<secret>) is shown
        this once and stored only as a hash. A tenant key (the default role) reads and acts
        on its tenant's jobs, runs and schedules only; an admin key on everything.
list    prints {"keys":[...]} (no secrets): active keys, of one tenant with --tenant,
        revoked ones too with --all.
revoke  revokes a key by id; running daemons refuse it within 5 seconds.
Reaches the database like enqueue. See docs/security.md.

Settings (flag, environment variable, [default]):
${settingsHelp('keys')}`,
};

/**
 * JSON lines for machines (a pipe, a file, a log collector); on a terminal, the same records
 * made readable by pino's own pretty printer (loaded only then).
 */
async function buildLogger(config: DaemonConfig, toStderr: boolean): Promise<PinoLogger> {
  const fd = toStderr ? 2 : 1;
  const options = { level: config.logLevel, base: { service: 'baton', pid: process.pid }, redact: ['apiToken', 'password'] };
  if (!(toStderr ? process.stderr : process.stdout).isTTY) return pino(options, pino.destination({ fd, sync: true }));
  const { default: pretty } = await import('pino-pretty');
  return pino(options, pretty({ destination: fd, sync: true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname,service' }));
}

export async function main(argv: string[]): Promise<number | undefined> {
  const [command, ...rest] = argv;
  if (command === undefined || command === '--help' || command === '-h' || command === 'help') {
    process.stdout.write(`${USAGE}\n`);
    return command === undefined ? EXIT_CONFIG : 0;
  }
  if (command === '--version' || command === '-v') {
    const pkg = JSON.parse(await readFile(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
    process.stdout.write(`${pkg.version}\n`);
    return 0;
  }
  if (command === 'bench') {
    // bench/main.ts owns its flags and its --help.
    const { runBench } = await import('./commands.ts');
    return runBench(rest);
  }
  if (!Object.hasOwn(HELP, command)) {
    process.stderr.write(`baton: unknown command "${command}"\n\n${USAGE}\n`);
    return EXIT_CONFIG;
  }
  const cmd = command as Command;
  // `baton cron`, `baton keys` and `baton workflow` take a subcommand before their flags; `keys revoke` an id.
  const sub =
    (cmd === 'cron' || cmd === 'keys' || cmd === 'workflow') && rest[0] !== undefined && !rest[0].startsWith('-')
      ? rest.shift()
      : undefined;
  const keyId = cmd === 'keys' && sub === 'revoke' && rest[0] !== undefined && !rest[0].startsWith('-') ? rest.shift() : undefined;
  const jobId = cmd === 'cancel' && rest[0] !== undefined && !rest[0].startsWith('-') ? rest.shift() : undefined;
  // Heavy modules load only after the configuration is known to be good.
  const own = { enqueue: ENQUEUE_FLAGS, cron: CRON_FLAGS, keys: KEYS_FLAGS, workflow: WORKFLOW_FLAGS } as const;
  const flags = parseFlags(rest, cmd, cmd in own ? own[cmd as keyof typeof own] : {});
  if (flags.help) {
    process.stdout.write(`${HELP[cmd]}\n`);
    return 0;
  }
  if (cmd === 'cron' && !CRON_SUBCOMMANDS.includes(sub as (typeof CRON_SUBCOMMANDS)[number])) {
    throw new ConfigError(`cron needs a subcommand: ${CRON_SUBCOMMANDS.join(' or ')} (see baton cron --help)`);
  }
  if (cmd === 'keys' && !KEYS_SUBCOMMANDS.includes(sub as (typeof KEYS_SUBCOMMANDS)[number])) {
    throw new ConfigError(`keys needs a subcommand: ${KEYS_SUBCOMMANDS.join(', ')} (see baton keys --help)`);
  }
  if (cmd === 'workflow' && !WORKFLOW_SUBCOMMANDS.includes(sub as (typeof WORKFLOW_SUBCOMMANDS)[number])) {
    throw new ConfigError(`workflow needs a subcommand: ${WORKFLOW_SUBCOMMANDS.join(' or ')} (see baton workflow --help)`);
  }
  if (cmd === 'cancel' && jobId === undefined) throw new ConfigError('cancel needs the job id (see baton cancel --help)');
  const config = loadConfig(process.env, flags, process.cwd(), cmd);
  if (cmd === 'cancel') {
    const { runCancel } = await import('./commands.ts');
    await runCancel(config, await buildLogger(config, true), jobId as string);
    return 0;
  }
  if (cmd === 'workflow') {
    const { parseWorkflowStartFlags, runWorkflowStart } = await import('./commands.ts');
    const start = parseWorkflowStartFlags(flags);
    await runWorkflowStart(config, await buildLogger(config, true), start);
    return 0;
  }
  if (cmd === 'keys') {
    const { runKeys } = await import('./key-commands.ts');
    await runKeys(config, await buildLogger(config, true), sub as (typeof KEYS_SUBCOMMANDS)[number], keyId, flags);
    return 0;
  }
  if (cmd === 'cron') {
    const { runCronList, runCronPreview } = await import('./cron-commands.ts');
    if (sub === 'preview') runCronPreview(flags);
    else await runCronList(config, await buildLogger(config, true), flags);
    return 0;
  }
  if (command === 'serve') {
    const { serve } = await import('./serve.ts');
    await serve(config, await buildLogger(config, false));
    return undefined; // runs until a signal; shutdown exits the process
  }
  const logger = await buildLogger(config, true);
  const { parseEnqueueFlags, runEnqueue, runMigrate } = await import('./commands.ts');
  if (command === 'migrate') await runMigrate(config, logger);
  else await runEnqueue(config, logger, parseEnqueueFlags(flags));
  return 0;
}

main(process.argv.slice(2)).then(
  (code) => {
    if (code !== undefined) process.exitCode = code;
  },
  (err: unknown) => {
    if (err instanceof ConfigError) {
      process.stderr.write(`baton: ${err.message}\n`);
      process.exitCode = EXIT_CONFIG;
    } else if (err instanceof PlainError) {
      process.stderr.write(`baton: ${err.message}\n`);
      process.exitCode = EXIT_FAILED;
    } else {
      process.stderr.write(`baton: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
      process.exitCode = EXIT_FAILED;
    }
  },
);
