// The floor of bench/stack.ts's concurrent-streams figure: a bare node:http server that answers every
// request with the stream the gateway relays for model chat-slow (a role chunk, 100 content chunks 20 ms
// apart, a final chunk, a usage chunk, [DONE]; OpenAI's chunk shape, about the gateway's bytes per
// chunk), and does nothing else: no parsing, no checks, no NATS, no Redis. What 1,000 of its streams add
// to its RSS is what the runtime itself needs for that traffic (sockets, HTTP state, timers, the
// garbage of 50,000 chunks a second). A test double, not a model. Port 0; prints `listening <port>`.
import { createServer } from 'node:http';

const TOKENS = 100;
const INTERVAL_MS = 20;
const HEAD = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache',
  connection: 'keep-alive',
};

const chunk = (id, created, delta, finish) =>
  `data: ${JSON.stringify({
    id,
    object: 'chat.completion.chunk',
    created,
    model: 'chat-slow',
    system_fingerprint: null,
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
  })}\n\n`;

let seq = 0;
const server = createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    const id = `chatcmpl-floor${++seq}`;
    const created = Math.floor(Date.now() / 1000);
    res.writeHead(200, HEAD);
    res.write(chunk(id, created, { role: 'assistant', content: '' }, null));
    let i = 0;
    const timer = setInterval(() => {
      if (++i <= TOKENS) {
        res.write(chunk(id, created, { content: `word${i} ` }, null));
        return;
      }
      clearInterval(timer);
      res.write(chunk(id, created, {}, 'length'));
      res.write(
        `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model: 'chat-slow', choices: [], usage: { prompt_tokens: 9, completion_tokens: TOKENS, total_tokens: TOKENS + 9 } })}\n\n`,
      );
      res.end('data: [DONE]\n\n');
    }, INTERVAL_MS);
    res.on('close', () => clearInterval(timer));
  });
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => console.log(`listening ${server.address().port}`));
// Stops by itself: when the parent goes away (stdin closes) or on SIGTERM.
process.stdin.on('close', () => process.exit(0));
process.stdin.resume();
process.on('SIGTERM', () => process.exit(0));
