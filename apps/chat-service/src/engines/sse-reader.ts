/**
 * Reads a `text/event-stream` body and yields the `data` of each event as it completes (multi-line
 * data joined by newlines; comments, `event:`, `id:` and `retry:` lines ignored), per the WHATWG
 * EventSource parsing rules. Chunk boundaries anywhere (inside a line, inside a UTF-8 character) are
 * handled.
 */
export async function* sseData(body: AsyncIterable<Uint8Array>): AsyncGenerator<string> {
  const decoder = new TextDecoder();
  let buf = '';
  let data: string[] = [];
  const take = function* (final: boolean): Generator<string> {
    for (;;) {
      const nl = buf.search(/\r\n|\r|\n/);
      if (nl < 0) {
        if (!final) return;
        if (buf) {
          line(buf);
          buf = '';
        }
        if (data.length) {
          yield data.join('\n');
          data = [];
        }
        return;
      }
      const l = buf.slice(0, nl);
      const sepLen = buf.startsWith('\r\n', nl) ? 2 : 1;
      // A lone '\r' at the very end may be the first half of '\r\n': wait for the next chunk.
      if (!final && sepLen === 1 && buf[nl] === '\r' && nl === buf.length - 1) return;
      buf = buf.slice(nl + sepLen);
      if (l === '') {
        if (data.length) {
          yield data.join('\n');
          data = [];
        }
        continue;
      }
      line(l);
    }
  };
  const line = (l: string) => {
    if (l.startsWith(':')) return;
    const colon = l.indexOf(':');
    const field = colon < 0 ? l : l.slice(0, colon);
    let value = colon < 0 ? '' : l.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'data') data.push(value);
  };
  for await (const chunk of body) {
    buf += decoder.decode(chunk, { stream: true });
    yield* take(false);
  }
  buf += decoder.decode();
  yield* take(true);
}
