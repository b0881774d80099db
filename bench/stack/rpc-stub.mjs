// Preloaded into the gateways of bench/stages.ts (`--import`): a chat request whose body has
// `user: "bench-stage-no-rpc"` gets its service's answer at once, from this process, instead of over
// NATS (a test double for the model service: the chat-service's end frame for max_tokens 1, made up
// here). Every other request goes over NATS as usual. What the gateway does around the call (auth,
// validation, limits, usage event, metrics, the reply) is unchanged, so the two differ by the NATS hop
// alone. `user: "bench-stage-no-rpc-no-usage"` also drops the request's usage event (no JetStream publish,
// no ack to handle): that stage's cost. Bench-only: never in an image.
const { RpcClient } = await import('../../libs/rpc/dist/index.js');
const { UsagePublisher } = await import('../../apps/gateway/dist/usage/usage-publisher.js');

/** Requests marked `user: "bench-stage-no-rpc-no-usage"`: their usage event is dropped (record below). */
const noUsage = new Set();
const record = UsagePublisher.prototype.record;
UsagePublisher.prototype.record = function stubbedRecord(ev) {
  if (noUsage.delete(ev.requestId)) return;
  record.call(this, ev);
};

const usage = { prompt_tokens: 9, completion_tokens: 1, total_tokens: 10 };
const call = RpcClient.prototype.call;
RpcClient.prototype.call = function stubbedCall(subject, req, opts) {
  const user = req.body?.user;
  if (user !== 'bench-stage-no-rpc' && user !== 'bench-stage-no-rpc-no-usage')
    return call.call(this, subject, req, opts);
  if (user === 'bench-stage-no-rpc-no-usage') noUsage.add(req.requestId);
  return Promise.resolve({
    data: {
      id: `chatcmpl-${req.requestId}`,
      object: 'chat.completion',
      created: Math.floor(Date.now() / 1000),
      model: req.model.id,
      choices: [{ index: 0, message: { role: 'assistant', content: 'Hello' }, finish_reason: 'length' }],
      usage,
    },
    usage,
  });
};
