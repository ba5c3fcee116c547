// Preloaded into a child process (node --expose-gc --import ./test/support/memory-probe.ts ...): on SIGUSR2
// it collects garbage and writes its process.memoryUsage() as one `MEMORY {...}` line on stderr, so a test
// can read a child's heap from the outside (see memoryOf in processes.ts).
process.on('SIGUSR2', () => {
  (globalThis as { gc?: () => void }).gc?.();
  process.stderr.write(`MEMORY ${JSON.stringify(process.memoryUsage())}\n`);
});
