// The account page's "use it" snippets (pure: unit-tested in snippets.spec.ts). The key itself is
// never written into a snippet: it is read from INFER_API_KEY, which the member sets once.

export interface Snippet {
  id: string;
  title: string;
  /** What the code block is (shown above it). */
  note: string;
  code: string;
}

/**
 * Snippets for curl, the openai SDK (Python and Node), Codex CLI and Claude Code, with the gateway's
 * base URL (`https://api.example.com/v1`) and a chat model of the member's tier filled in.
 */
export function snippets(apiBase: string, chatModel: string | undefined): Snippet[] {
  const base = apiBase.replace(/\/+$/, '');
  const origin = base.replace(/\/v1$/, '');
  const model = chatModel ?? 'chat-A';
  return [
    {
      id: 'curl',
      title: 'curl',
      note: 'A chat completion from a shell:',
      code: [
        `export INFER_API_KEY=<your key>`,
        `curl ${base}/chat/completions \\`,
        `  -H "Authorization: Bearer $INFER_API_KEY" \\`,
        `  -H "Content-Type: application/json" \\`,
        `  -d '{"model": "${model}",`,
        `       "messages": [{"role": "user", "content": "Hello"}]}'`,
      ].join('\n'),
    },
    {
      id: 'python',
      title: 'openai SDK (Python)',
      note: 'pip install openai, then:',
      code: [
        'import os',
        'from openai import OpenAI',
        '',
        'client = OpenAI(',
        `    base_url="${base}",`,
        '    api_key=os.environ["INFER_API_KEY"],',
        ')',
        'reply = client.chat.completions.create(',
        `    model="${model}",`,
        '    messages=[{"role": "user", "content": "Hello"}],',
        ')',
        'print(reply.choices[0].message.content)',
      ].join('\n'),
    },
    {
      id: 'node',
      title: 'openai SDK (Node.js)',
      note: 'npm install openai, then:',
      code: [
        "import OpenAI from 'openai';",
        '',
        'const { INFER_API_KEY } = process.env;',
        'const client = new OpenAI({',
        `  baseURL: '${base}',`,
        '  apiKey: INFER_API_KEY,',
        '});',
        'const reply = await client.chat.completions.create({',
        `  model: '${model}',`,
        "  messages: [{ role: 'user', content: 'Hello' }],",
        '});',
        'console.log(reply.choices[0].message.content);',
      ].join('\n'),
    },
    {
      id: 'codex',
      title: 'Codex CLI',
      note: 'In ~/.codex/config.toml, with INFER_API_KEY set:',
      code: [
        `model = "${model}"`,
        'model_provider = "infer"',
        '',
        '[model_providers.infer]',
        'name = "infer"',
        `base_url = "${base}"`,
        'env_key = "INFER_API_KEY"',
        'wire_api = "responses"',
      ].join('\n'),
    },
    {
      id: 'claude',
      title: 'Claude Code',
      note: 'The gateway’s origin, without /v1:',
      code: [
        `export ANTHROPIC_BASE_URL=${origin}`,
        'export ANTHROPIC_API_KEY=$INFER_API_KEY',
        `export ANTHROPIC_MODEL=${model}`,
        'claude',
      ].join('\n'),
    },
  ];
}
