// The chat-service of bench/stack.ts from its production build (apps/chat-service/dist), on the NATS
// subjects of this run only (BENCH_SUBJECT_PREFIX), so that no other chat-service on the machine answers.
// Prints `ready` on stdout; stops on SIGTERM (drains like main.ts) or when the parent goes away.
const { startChatService } = await import('../../apps/chat-service/dist/app.js');
const svc = await startChatService({ subjectPrefix: process.env.BENCH_SUBJECT_PREFIX ?? '' });
console.log('ready');
const stop = () => void svc.stop(2_000).finally(() => process.exit(0));
process.stdin.on('close', stop);
process.stdin.resume();
process.on('SIGTERM', stop);
