// A minimal fake OpenAI-compatible upstream for bench/stack.ts (a test double, not a model): POST
// /v1/chat/completions answers at once, as one JSON completion or as an SSE stream of two content
// chunks, a usage chunk and [DONE]. Unlike test/support/fake-openai-upstream.ts it records nothing,
// so its memory stays flat under load. Port 0 (ephemeral); prints `listening <port>` on stdout.
import { createServer } from 'node:http';

const json = (model) =>
  JSON.stringify({
    id: 'chatcmpl-bench',
    object: 'chat.completion',
    created: 1,
    model,
    choices: [{ index: 0, message: { role: 'assistant', content: 'Hello' }, finish_reason: 'length' }],
    usage: { prompt_tokens: 9, completion_tokens: 1, total_tokens: 10 },
  });
const chunk = (model, delta, finish) =>
  `data: ${JSON.stringify({ id: 'chatcmpl-bench', object: 'chat.completion.chunk', created: 1, model, choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
const usage = (model) =>
  `data: ${JSON.stringify({ id: 'chatcmpl-bench', object: 'chat.completion.chunk', created: 1, model, choices: [], usage: { prompt_tokens: 9, completion_tokens: 2, total_tokens: 11 } })}\n\n`;

const server = createServer((req, res) => {
  const parts = [];
  req.on('data', (d) => parts.push(d));
  req.on('end', () => {
    let body = {};
    try {
      body = JSON.parse(Buffer.concat(parts).toString('utf8'));
    } catch {
      // an empty or broken body still gets the canned answer
    }
    const model = typeof body.model === 'string' ? body.model : 'bench';
    if (body.stream) {
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      res.end(
        chunk(model, { role: 'assistant', content: 'Hello' }, null) +
          chunk(model, { content: ' there' }, 'length') +
          usage(model) +
          'data: [DONE]\n\n',
      );
      return;
    }
    const out = json(model);
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(out) });
    res.end(out);
  });
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => console.log(`listening ${server.address().port}`));
// Stops by itself: when the parent goes away (stdin closes) or on SIGTERM.
process.stdin.on('close', () => process.exit(0));
process.stdin.resume();
process.on('SIGTERM', () => process.exit(0));
