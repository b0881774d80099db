/**
 * Questions about this repository's own documentation, written as a user would ask them, each with the
 * section that answers it (`file#heading`, the heading text without its `#`s). `paraphrase: true` marks
 * questions phrased without the section's own key words (the case lexical methods cannot solve).
 */
export interface Question {
  q: string;
  answer: string;
  paraphrase?: boolean;
}

export const QUESTIONS: Question[] = [
  // README.md
  { q: 'How do I install everything on a fresh Debian machine?', answer: 'README.md#Quick start' },
  {
    q: 'what do I run to get the whole thing up and running the first time',
    answer: 'README.md#Quick start',
    paraphrase: true,
  },
  { q: 'How do I shut the apps down?', answer: 'README.md#Stopping', paraphrase: true },
  { q: 'stop postgres and redis too', answer: 'README.md#Stopping' },
  { q: 'What does the CI job run?', answer: 'README.md#Continuous integration' },
  { q: 'which ports do postgres, redis and nats listen on', answer: 'README.md#Backing services' },
  { q: 'can I run it with docker compose', answer: 'README.md#Docker Compose' },
  { q: 'deploying to a k8s cluster with kustomize', answer: 'README.md#Kubernetes' },
  {
    q: 'which tool do operators use to create members and keys from the terminal',
    answer: 'README.md#admin-cli',
    paraphrase: true,
  },
  { q: 'where is each app in the source tree', answer: 'README.md#Layout' },
  {
    q: 'how are settings passed to each app and what happens when one is wrong',
    answer: 'README.md#Configuration',
  },
  {
    q: 'Who checks API keys and resolves the tier before a request reaches a service?',
    answer: 'README.md#gateway',
  },
  // docs/api-decisions.md
  {
    q: 'What status code do I get when I exceed the requests per minute?',
    answer: 'docs/api-decisions.md#Limits and quotas (gateway `src/limits/`)',
  },
  {
    q: 'I am sending too many calls too fast, what will the server answer',
    answer: 'docs/api-decisions.md#Limits and quotas (gateway `src/limits/`)',
    paraphrase: true,
  },
  { q: 'Are unknown fields in the request body rejected?', answer: 'docs/api-decisions.md#Requests' },
  { q: 'is max_completion_tokens accepted as max_tokens', answer: 'docs/api-decisions.md#Requests' },
  { q: 'in which order are models listed by GET /v1/models', answer: 'docs/api-decisions.md#Models' },
  {
    q: 'what happens when I ask for a model my plan cannot see',
    answer: 'docs/api-decisions.md#Models',
    paraphrase: true,
  },
  {
    q: 'Which voices can the speech endpoint use?',
    answer: 'docs/api-decisions.md#Audio (speech and transcription)',
  },
  {
    q: 'what error does the search endpoint return when its engine is down',
    answer: 'docs/api-decisions.md#Web search (`POST /v1/search`)',
  },
  {
    q: 'Does the MCP endpoint support SSE streams or sessions?',
    answer: 'docs/api-decisions.md#MCP (`POST /mcp`)',
  },
  { q: 'How can an operator see the job queues and their backlog?', answer: 'docs/api-decisions.md#Admin' },
  {
    q: 'what error for an empty string in the embeddings input',
    answer: 'docs/api-decisions.md#Embeddings and rerank',
  },
  // ADRs
  {
    q: 'Why not use the NestJS NATS transport for request and reply?',
    answer: 'docs/adr/0001-nats-rpc.md#Context',
  },
  {
    q: 'what happens to a request when a backend process crashes halfway',
    answer: 'docs/adr/0001-nats-rpc.md#Consequences',
    paraphrase: true,
  },
  {
    q: 'How is the billing table split by month?',
    answer: 'docs/adr/0002-usage-ledger.md#Decision',
    paraphrase: true,
  },
  {
    q: 'why did we not keep a summary table of totals instead',
    answer: 'docs/adr/0002-usage-ledger.md#Why not the roll-up',
    paraphrase: true,
  },
  {
    q: 'how do we delete old usage records later on',
    answer: 'docs/adr/0002-usage-ledger.md#Consequences',
    paraphrase: true,
  },
  {
    q: 'How are rate limits enforced atomically across several gateway replicas?',
    answer: 'docs/adr/0003-limits-in-redis.md#Decision',
  },
  {
    q: 'does the quota logic work on a redis cluster',
    answer: 'docs/adr/0003-limits-in-redis.md#Consequences',
  },
  {
    q: 'Why do uploaded sound files not go over the message bus?',
    answer: 'docs/adr/0004-audio-payloads-and-jobs.md#Context',
    paraphrase: true,
  },
  {
    q: 'where is the audio upload stored while the transcription runs',
    answer: 'docs/adr/0004-audio-payloads-and-jobs.md#Decision',
  },
  // audio-service
  {
    q: 'what environment variables does the audio service read',
    answer: 'apps/audio-service/README.md#Environment',
  },
  {
    q: 'Which text-to-speech programs produce the voices?',
    answer: "apps/audio-service/README.md#Engine `embedded-tts` (the default catalog's `tts-model`)",
  },
  {
    q: 'how do I use Kokoro as the speech server instead',
    answer: 'apps/audio-service/README.md#Engine `openai` (an OpenAI-compatible speech server)',
  },
  {
    q: 'how big can the file be that I send for speech to text',
    answer: 'apps/audio-service/README.md#Transcription',
    paraphrase: true,
  },
  {
    q: 'which offline recogniser turns recordings into text and how accurate is it',
    answer: "apps/audio-service/README.md#Engine `pocketsphinx` (the default catalog's `stt-model`)",
    paraphrase: true,
  },
  { q: 'How is a transcription billed?', answer: 'apps/audio-service/README.md#Usage reported' },
  {
    q: 'which prometheus metrics does the audio worker export',
    answer: 'apps/audio-service/README.md#Metrics (`AUDIO_METRICS_PORT`)',
  },
  // chat-service
  {
    q: 'How do I point a chat model at a vLLM server?',
    answer:
      'apps/chat-service/README.md#`openai`: any OpenAI-compatible server (vLLM, SGLang, llama.cpp server, TGI, Ollama ...)',
  },
  {
    q: 'run a GGUF chat model on the CPU inside the service',
    answer: 'apps/chat-service/README.md#`llama-cpp`: embedded llama.cpp (node-llama-cpp 3.22, CPU)',
  },
  {
    q: 'is the default chat model a real language model?',
    answer: 'apps/chat-service/README.md#`simulator`: a TEST DOUBLE, not a model',
  },
  {
    q: 'what is the default temperature and top_p',
    answer: 'apps/chat-service/README.md#Rules applied here (model by model, from the catalog entry)',
  },
  {
    q: 'how random is the text generation by default',
    answer: 'apps/chat-service/README.md#Rules applied here (model by model, from the catalog entry)',
    paraphrase: true,
  },
  // embedding-service
  {
    q: 'How are concurrent embedding requests merged into one batch?',
    answer: 'apps/embedding-service/README.md#Dynamic batching (embeddings)',
  },
  {
    q: 'grouping simultaneous vector requests to use the hardware better',
    answer: 'apps/embedding-service/README.md#Dynamic batching (embeddings)',
    paraphrase: true,
  },
  {
    q: 'what happens when the reply with thousands of vectors is bigger than a NATS message',
    answer: 'apps/embedding-service/README.md#Large replies',
  },
  {
    q: 'which engines can compute vectors for text',
    answer: 'apps/embedding-service/README.md#Embeddings',
    paraphrase: true,
  },
  {
    q: 'How are relevance scores for reordering documents computed?',
    answer: 'apps/embedding-service/README.md#Rerank',
    paraphrase: true,
  },
  // gateway
  {
    q: 'how do I override the per-key request limits with a file',
    answer: 'apps/gateway/README.md#Configuration',
  },
  {
    q: 'How do I read usage per member through the admin API?',
    answer: 'apps/gateway/README.md#Admin API (`src/admin/`)',
  },
  {
    q: 'how much latency do the quota checks add',
    answer: 'apps/gateway/README.md#Overhead',
    paraphrase: true,
  },
  // image-service
  {
    q: 'how do I block some words in picture prompts',
    answer: 'apps/image-service/README.md#Content policy',
    paraphrase: true,
  },
  {
    q: 'Can the image service use ComfyUI or LocalAI?',
    answer: 'apps/image-service/README.md#Engines (catalog `engine.type`)',
  },
  {
    q: 'what happens step by step when someone asks for a drawing',
    answer: 'apps/image-service/README.md#How a request flows',
    paraphrase: true,
  },
  // search-service
  {
    q: 'How do I add my own markdown files to the local search index?',
    answer: 'apps/search-service/README.md#The local index: ingesting documents',
  },
  {
    q: 'feeding my company wiki into the offline search',
    answer: 'apps/search-service/README.md#The local index: ingesting documents',
    paraphrase: true,
  },
  {
    q: 'How long are search results remembered?',
    answer: 'apps/search-service/README.md#Cache',
    paraphrase: true,
  },
  {
    q: 'Is fetching page content protected against SSRF to private addresses?',
    answer: 'apps/search-service/README.md#fetch_content',
  },
  {
    q: 'can a chatbot call the search as a function tool',
    answer: 'apps/search-service/README.md#The web_search tool',
  },
  {
    q: 'Which search backends are supported: SearXNG, Brave?',
    answer: 'apps/search-service/README.md#Engines',
  },
  {
    q: 'why is the search provider not configured in the model catalog',
    answer: 'apps/search-service/README.md#Decisions',
  },
  // ledger-writer, bench
  {
    q: 'What happens to usage events while the database is down?',
    answer: 'apps/ledger-writer/README.md#(intro)',
  },
  {
    q: 'how much time does the gateway add in front of a chat request',
    answer: 'bench/README.md#chat-overhead: what the gateway adds to a chat request',
  },
  {
    q: 'where are temporary generated pictures kept until they are downloaded',
    answer: 'libs/image-store/README.md#(intro)',
    paraphrase: true,
  },
];

/** Pairs for the similarity check: the first pair of each line must be closer than the second. */
export const SIMILARITY: Array<[[string, string], [string, string]]> = [
  [
    ['car', 'automobile'],
    ['car', 'banana'],
  ],
  [
    ['doctor', 'physician'],
    ['doctor', 'bicycle'],
  ],
  [
    ['happy', 'glad'],
    ['happy', 'volcano'],
  ],
  [
    ['buy', 'purchase'],
    ['buy', 'sleep'],
  ],
  [
    ['big', 'large'],
    ['big', 'quietly'],
  ],
  [
    ['king', 'queen'],
    ['king', 'lettuce'],
  ],
  [
    ['How do I reset my password?', 'I forgot my login credentials'],
    ['How do I reset my password?', 'The weather in Paris is sunny'],
  ],
  [
    ['the film was wonderful', 'I loved the movie'],
    ['the film was wonderful', 'the invoice is overdue'],
  ],
  [
    ['cheap flights to London', 'low-cost airline tickets to England'],
    ['cheap flights to London', 'how to bake sourdough bread'],
  ],
  [
    ['the server crashed', 'the machine went down'],
    ['the server crashed', 'she sang a lullaby'],
  ],
];
