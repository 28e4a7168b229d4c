// The command line: each command's setting flags (from the table in settings.ts) plus its own,
// and its --help lines. A flag the command does not take is an error, never ignored.

import { parseArgs } from 'node:util';
import { ConfigError } from './env.ts';
import { COMMAND_SETTINGS, type Command, SETTINGS } from './settings.ts';

/** parseArgs options for the settings of `command`, to merge with its own flags. */
function settingFlags(command: Command): Record<string, { type: 'string' }> {
  return Object.fromEntries(COMMAND_SETTINGS[command].map((name) => [SETTINGS[name][0], { type: 'string' as const }]));
}

/** Lines for `baton <command> --help`: flag, env, default, description, for the settings it reads. */
export function settingsHelp(command: Command): string {
  return COMMAND_SETTINGS[command]
    .map((env) => {
      const [flag, , help, def] = SETTINGS[env];
      return `  --${flag.padEnd(20)} ${env.padEnd(26)} [${def}]\n      ${help}`;
    })
    .join('\n');
}

/**
 * Parses argv for `command`: the flags of the settings it reads plus `extra` (its
 * own). Unknown flags, another command's setting flags and stray positionals are
 * ConfigErrors (a typo must not be ignored, nor a setting the command would not use).
 */
export function parseFlags(
  argv: string[],
  command: Command = 'serve',
  extra: Record<string, { type: 'string' | 'boolean'; short?: string }> = {},
): Record<string, string | boolean | undefined> {
  try {
    const { values, positionals } = parseArgs({
      args: argv,
      options: { ...settingFlags(command), ...extra, help: { type: 'boolean', short: 'h' } },
      strict: true,
      allowPositionals: true,
    });
    if (positionals.length > 0) throw new ConfigError(`unexpected argument: ${positionals[0]}`);
    return values as Record<string, string | boolean | undefined>;
  } catch (err) {
    if (err instanceof ConfigError) throw err;
    // parseArgs names the option (without any =value) in quotes; say whose flag it is instead.
    const flag =
      (err as NodeJS.ErrnoException).code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' ? /'(-[^']+)'/.exec((err as Error).message)?.[1] : undefined;
    if (flag === undefined) throw new ConfigError((err as Error).message);
    const owner = (Object.keys(COMMAND_SETTINGS) as Command[]).find((c) => flag.startsWith('--') && flag.slice(2) in settingFlags(c));
    throw new ConfigError(
      owner === undefined
        ? `unknown flag ${flag} (see baton ${command} --help)`
        : `${flag} is a flag of "baton ${owner}", not of "baton ${command}" (see baton ${command} --help)`,
    );
  }
}
