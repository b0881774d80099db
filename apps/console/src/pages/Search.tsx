import { type FormEvent, useState } from 'react';
import { api, query } from '../api.js';
import { utc } from '../format.js';
import { useLoad } from '../hooks.js';
import { navigate } from '../router.js';
import { READ_ONLY_REASON, useCanWrite } from '../session.js';
import { BarChart, Button, Dialog, ErrorNote, Field } from '../ui.js';

interface Source {
  source: string;
  documents: number;
  newest: number | null;
}
interface Doc {
  url: string;
  title: string;
  source: string;
  fetched_at: number;
}

/** The local web-search index: documents per source, one source's documents, ingest, remove. */
export function SearchPage(props: { params: URLSearchParams }) {
  const canWrite = useCanWrite();
  const source = props.params.get('source') ?? '';
  const after = props.params.get('after') ?? '';
  const sources = useLoad(() => api<{ data: Source[] }>('GET', '/admin/search/sources'), 'sources');
  const docs = useLoad(
    () =>
      api<{ data: Doc[]; next_after: string | null }>(
        'GET',
        `/admin/search/documents${query({ source, after, limit: 25 })}`,
      ),
    `${source}|${after}`,
  );
  const [failure, setFailure] = useState<unknown>(null);
  const [removing, setRemoving] = useState<Doc | null>(null);
  const [form, setForm] = useState({ url: '', title: '', body: '', source: 'console' });
  const reload = () => {
    sources.reload();
    docs.reload();
  };
  const ingest = async (e: FormEvent) => {
    e.preventDefault();
    setFailure(null);
    try {
      await api('POST', '/admin/search/documents', { documents: [form] });
      setForm({ ...form, url: '', title: '', body: '' });
      reload();
    } catch (error) {
      setFailure(error);
    }
  };
  const set = (k: keyof typeof form) => (v: string) => setForm({ ...form, [k]: v });
  return (
    <section>
      <h1>Search index</h1>
      <ErrorNote error={sources.error ?? docs.error ?? failure} />
      <BarChart
        title="Documents per source"
        unit="Documents"
        bars={(sources.data?.data ?? []).map((s) => ({ label: s.source, value: s.documents }))}
      />
      <div className="filters">
        <Field
          label="Source"
          name="source"
          value={source}
          options={['', ...(sources.data?.data ?? []).map((s) => s.source)]}
          onChange={(v) => navigate('search', { source: v })}
        />
      </div>
      <table>
        <caption className="sr-only">Documents</caption>
        <thead>
          <tr>
            <th scope="col">Title</th>
            <th scope="col" className="wide">
              URL
            </th>
            <th scope="col">Source</th>
            <th scope="col" className="wide">
              Fetched
            </th>
            <th scope="col">Actions</th>
          </tr>
        </thead>
        <tbody>
          {(docs.data?.data ?? []).map((d) => (
            <tr key={d.url}>
              <td>{d.title}</td>
              <td className="wide mono">{d.url}</td>
              <td>{d.source}</td>
              <td className="wide">{utc(d.fetched_at)}</td>
              <td>
                <Button
                  kind="danger"
                  disabled={!canWrite}
                  reason={READ_ONLY_REASON}
                  onClick={() => setRemoving(d)}
                >
                  Remove
                </Button>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      <div className="pager">
        <Button disabled={!after} onClick={() => navigate('search', { source })}>
          First page
        </Button>
        <Button
          disabled={!docs.data?.next_after}
          onClick={() => navigate('search', { source, after: docs.data?.next_after ?? undefined })}
        >
          Next
        </Button>
      </div>
      <h2>Ingest a document</h2>
      <form onSubmit={ingest} noValidate>
        <Field label="URL" name="url" value={form.url} onChange={set('url')} required />
        <Field label="Title" name="title" value={form.title} onChange={set('title')} />
        <Field label="Source" name="source" value={form.source} onChange={set('source')} />
        <label htmlFor="doc-body">Text</label>
        <textarea id="doc-body" rows={5} value={form.body} onChange={(e) => set('body')(e.target.value)} />
        <div className="actions">
          <Button type="submit" kind="primary" disabled={!canWrite} reason={READ_ONLY_REASON}>
            Ingest
          </Button>
        </div>
      </form>
      <Dialog open={Boolean(removing)} title="Remove this document?" onClose={() => setRemoving(null)}>
        <p>
          <span className="mono">{removing?.url}</span> leaves the local search index at once.
        </p>
        <div className="actions">
          <Button onClick={() => setRemoving(null)}>Cancel</Button>
          <Button
            kind="danger"
            onClick={async () => {
              const d = removing;
              setRemoving(null);
              if (!d) return;
              try {
                await api('DELETE', '/admin/search/documents', { urls: [d.url] });
              } catch (error) {
                setFailure(error);
              }
              reload();
            }}
          >
            Remove document
          </Button>
        </div>
      </Dialog>
    </section>
  );
}
