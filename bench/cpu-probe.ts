// Preloaded into a benchmarked process (`--import ./bench/cpu-probe.ts`, spawned with an IPC channel):
// answers 'cpu' with process.cpuUsage() (user + system of every thread, in microseconds), which is
// finer than /proc/<pid>/stat's 10 ms ticks; and, in a process started with --expose-gc, 'gc' with a
// full collection first (bench/telemetry.ts before each round, outside what it measures). Costs the
// process nothing between questions.
process.on('message', (m) => {
  if (m === 'cpu') process.send?.({ cpu: process.cpuUsage() });
  else if (m === 'gc') {
    (globalThis as { gc?: () => void }).gc?.();
    process.send?.({ cpu: process.cpuUsage() });
  }
});
// The channel must not keep the process alive after it is asked to stop.
process.channel?.unref();
