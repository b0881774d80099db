import { useState } from 'react';
import { api } from '../api.js';
import { utc } from '../format.js';
import { useLoad } from '../hooks.js';
import { READ_ONLY_REASON, useCanWrite } from '../session.js';
import { Button, ErrorNote } from '../ui.js';

interface AdminModel {
  id: string;
  kind: string;
  rank: number;
  tiers: string[];
  enabled: boolean;
  capabilities: Record<string, unknown>;
  engine: string | null;
  context_window: number | null;
  updated_at: number;
}

export function ModelsPage() {
  const canWrite = useCanWrite();
  const list = useLoad(() => api<{ data: AdminModel[] }>('GET', '/admin/models'), 'models');
  const [failure, setFailure] = useState<unknown>(null);
  const toggle = async (m: AdminModel) => {
    setFailure(null);
    try {
      await api('PATCH', `/admin/models/${encodeURIComponent(m.id)}`, { enabled: !m.enabled });
      list.reload();
    } catch (error) {
      setFailure(error);
    }
  };
  return (
    <section>
      <h1>Models</h1>
      <p>
        Enabling or disabling a model applies at once on this gateway and within the catalog refresh on
        others.
      </p>
      <ErrorNote error={list.error ?? failure} />
      <table className="cards">
        <caption className="sr-only">Model catalog</caption>
        <thead>
          <tr>
            <th scope="col">Model</th>
            <th scope="col" className="wide">
              Kind
            </th>
            <th scope="col">Tiers</th>
            <th scope="col" className="wide">
              Capabilities
            </th>
            <th scope="col">Engine</th>
            <th scope="col" className="wide">
              Updated
            </th>
            <th scope="col">Status</th>
          </tr>
        </thead>
        <tbody>
          {(list.data?.data ?? []).map((m) => (
            <tr key={m.id}>
              <td className="mono" data-label="Model">
                {m.id}
              </td>
              <td className="wide" data-label="Kind">
                {m.kind}
              </td>
              <td data-label="Tiers">{m.tiers.join(', ')}</td>
              <td className="wide" data-label="Capabilities">
                {Object.entries(m.capabilities ?? {})
                  .filter(([, v]) => v === true)
                  .map(([k]) => k)
                  .join(', ') || '-'}
              </td>
              <td className="mono" data-label="Engine">
                {m.engine ?? '-'}
              </td>
              <td className="wide" data-label="Updated">
                {utc(m.updated_at)}
              </td>
              <td data-label="Status">
                <div className="actions">
                  {m.enabled ? 'enabled' : <span className="badge danger">disabled</span>}
                  <Button
                    kind={m.enabled ? 'plain' : 'primary'}
                    disabled={!canWrite}
                    reason={READ_ONLY_REASON}
                    onClick={() => toggle(m)}
                    label={m.enabled ? `Disable ${m.id}` : `Enable ${m.id}`}
                  >
                    {m.enabled ? 'Disable' : 'Enable'}
                  </Button>
                </div>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}
