// Polling with a deadline, for the harness and its child processes alike (no side effects on
// import, unlike child/ipc.ts, which takes over the process's IPC channel).

/** Polls `cond` every `everyMs` until true or the deadline; returns whether it became true. */
export async function until(cond: () => Promise<boolean> | boolean, deadlineMs: number, everyMs = 10): Promise<boolean> {
  const end = Date.now() + deadlineMs;
  for (;;) {
    if (await cond()) return true;
    if (Date.now() >= end) return false;
    await new Promise((r) => setTimeout(r, everyMs));
  }
}
