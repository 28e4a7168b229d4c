// Live progress: one updating line on a terminal, plain lines otherwise (CI logs).

export class Progress {
  private readonly tty = Boolean(process.stderr.isTTY);
  private lineOpen = false;
  private readonly started = Date.now();

  private stamp(): string {
    const s = Math.round((Date.now() - this.started) / 1000);
    return `[${String(Math.floor(s / 60)).padStart(2, '0')}:${String(s % 60).padStart(2, '0')}]`;
  }

  /** Transient status (overwritten on a TTY, printed on its own line otherwise). */
  update(text: string): void {
    if (this.tty) {
      const cols = process.stderr.columns ?? 100;
      process.stderr.write(`\r\x1b[2K${`${this.stamp()} ${text}`.slice(0, cols - 1)}`);
      this.lineOpen = true;
    } else {
      process.stderr.write(`${this.stamp()} ${text}\n`);
    }
  }

  /** A line that stays (results, warnings). */
  log(text: string): void {
    if (this.tty && this.lineOpen) process.stderr.write('\r\x1b[2K');
    this.lineOpen = false;
    process.stderr.write(`${this.stamp()} ${text}\n`);
  }

  done(): void {
    if (this.tty && this.lineOpen) process.stderr.write('\r\x1b[2K');
    this.lineOpen = false;
  }
}
