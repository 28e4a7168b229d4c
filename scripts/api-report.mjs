// Checks (or, with --update, rewrites) the API report of each package entry, api/*.api.md,
// with API Extractor reading the declarations in dist/ (`npm run api:check` builds them first).
// Fails when a report differs from the committed one or an exported name has no doc comment.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Extractor, ExtractorConfig, ExtractorLogLevel } from '@microsoft/api-extractor';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const update = process.argv.includes('--update');

/**
 * The entries of package.json "exports". `forgotten`: also report the declarations the entry's
 * types use without exporting them (the zod schemas behind the option types, JobBase, ...), so a
 * change there shows in the report too. Not for the client: its declarations already spell out
 * every route's types, and the forgotten createApp would add the HTTP app's internals again.
 */
const ENTRIES = [
  { entry: 'baton-queue', dts: 'dist/index.d.ts', report: 'baton-queue.api.md', forgotten: true },
  { entry: 'baton-queue/client', dts: 'dist/client/index.d.ts', report: 'client.api.md', forgotten: false },
];
// A folder of this run's own: not under dist/, which npm pack ships, nor in node_modules, which
// several checkouts may share (a worktree's symlink).
const TEMP = mkdtempSync(path.join(os.tmpdir(), 'baton-api-report-'));
process.on('exit', () => rmSync(TEMP, { recursive: true, force: true }));

/** The exported names a report marks `(undocumented)`: a declaration with no doc comment. */
function undocumentedExports(reportText) {
  const lines = reportText.split('\n');
  const names = [];
  for (let i = 1; i < lines.length; i++) {
    if (!/^\/\/ @\w+ \(undocumented\)$/.test(lines[i - 1])) continue;
    const m = /^export (?:declare )?(?:abstract )?(?:class|interface|type|const|function|enum|namespace) (\w+)/.exec(lines[i]);
    if (m) names.push(m[1]);
  }
  return names;
}

let failed = false;
for (const { entry, dts, report, forgotten } of ENTRIES) {
  const config = ExtractorConfig.prepare({
    configObjectFullPath: undefined,
    packageJsonFullPath: path.join(ROOT, 'package.json'),
    configObject: {
      projectFolder: ROOT,
      mainEntryPointFilePath: path.join(ROOT, dts),
      compiler: { tsconfigFilePath: path.join(ROOT, 'tsconfig.build.json') },
      newlineKind: 'lf',
      apiReport: {
        enabled: true,
        reportFileName: report,
        reportFolder: path.join(ROOT, 'api'),
        // The fresh report is written here and compared with the committed one.
        reportTempFolder: TEMP,
        includeForgottenExports: forgotten,
      },
      docModel: { enabled: false },
      dtsRollup: { enabled: false },
      tsdocMetadata: { enabled: false },
      messages: {
        compilerMessageReporting: { default: { logLevel: 'error' } },
        extractorMessageReporting: {
          default: { logLevel: 'error' },
          // Members without a doc comment are marked in the report; exported names are checked below.
          'ae-undocumented': { logLevel: 'none' },
          // Not fatal, and not noted in the report (the note carries a line number of dist/, which
          // every edit above it would change): the zod schemas behind the option types are used
          // by the entry's types but not meant to be imported. The library's report shows them
          // (without `export`), as `forgotten` above says.
          'ae-forgotten-export': { logLevel: 'none', addToApiReportFile: false },
          // No release tags (@public, @beta): everything an entry exports is public.
          'ae-missing-release-tag': { logLevel: 'none' },
        },
        // The comments are prose for readers of the code ({ a, b }, ->, @opentelemetry/api),
        // not TSDoc markup for a documentation generator: their syntax is not checked.
        tsdocMessageReporting: { default: { logLevel: 'none' } },
      },
    },
  });
  const result = Extractor.invoke(config, {
    localBuild: update,
    // The system typings (lib.*.d.ts) of the TypeScript that builds dist/, not API Extractor's own.
    typescriptCompilerFolder: path.join(ROOT, 'node_modules', 'typescript'),
    printApiReportDiff: !update,
    messageCallback: (message) => {
      // Its advice on a changed report names its own CLI; ours, below, names the npm script.
      if (message.messageId === 'console-api-report-not-copied') message.logLevel = ExtractorLogLevel.None;
    },
  });

  const undocumented = undocumentedExports(readFileSync(path.join(TEMP, report), 'utf8'));
  if (undocumented.length > 0) {
    console.error(
      `\napi-report: '${entry}' exports names without a doc comment (/** ... */ at the declaration): ${undocumented.join(', ')}`,
    );
    failed = true;
  }
  if (result.apiReportChanged && !update) {
    console.error(
      `\napi-report: the public API of '${entry}' differs from api/${report} (diff above).\n` +
        'If the change is deliberate, run `npm run api:update` and commit api/ with it (docs/testing.md, The public API).',
    );
    failed = true;
  } else if (!result.succeeded) {
    console.error(`\napi-report: '${entry}': ${result.errorCount} error(s), ${result.warningCount} warning(s) (above)`);
    failed = true;
  } else if (undocumented.length === 0) {
    console.log(`api-report: '${entry}' ${update && result.apiReportChanged ? 'written to' : 'matches'} api/${report}`);
  }
}
process.exit(failed ? 1 : 0);
