import type { QueueJobDetail, QueueJobView } from '@infer/contracts';
import { type FormEvent, useState } from 'react';
import { api, query } from '../api.js';
import { useConfirm } from '../confirm.js';
import { ago, utc } from '../format.js';
import { useLoad, useNow } from '../hooks.js';
import { navigate } from '../router.js';
import { READ_ONLY_REASON, useCanWrite } from '../session.js';
import { BarChart, Button, Dialog, ErrorNote, Field } from '../ui.js';

export interface QueueReport {
  name: string;
  paused: boolean;
  counts: Record<string, number>;
  workers: number;
}

const STATES = ['waiting', 'active', 'delayed', 'failed', 'completed'] as const;
/** Counts that give way on a phone (the `wide` class), so that the pause/resume column stays on screen. */
const SECONDARY: ReadonlySet<string> = new Set(['delayed', 'completed']);

/** Queue depths per BullMQ queue, polled every 10 s while the tab is visible. */
export function QueuesPage(props: { params: URLSearchParams }) {
  const queues = useLoad(() => api<{ data: QueueReport[] }>('GET', '/admin/queues'), 'queues', 10_000);
  const now = useNow();
  const canWrite = useCanWrite();
  const confirm = useConfirm();
  const data = queues.data?.data ?? [];
  const setPaused = (q: QueueReport, paused: boolean) => {
    const waiting = (q.counts.waiting ?? 0) + (q.counts.delayed ?? 0);
    confirm.ask({
      title: (
        <>
          {paused ? 'Pause' : 'Resume'} <span className="mono nowrap">{q.name}</span>?
        </>
      ),
      body: paused ? (
        <p>
          No worker starts a new job of <span className="mono">{q.name}</span> until it is resumed; the{' '}
          {q.counts.active ?? 0} running jobs finish, the {waiting} waiting ones wait. Clients' requests that
          need this queue wait with them.
        </p>
      ) : (
        <p>
          The workers of <span className="mono">{q.name}</span> start its {waiting} waiting jobs again.
        </p>
      ),
      confirmLabel: paused ? 'Pause queue' : 'Resume queue',
      danger: paused,
      action: () => api('POST', `/admin/queues/${encodeURIComponent(q.name)}/${paused ? 'pause' : 'resume'}`),
      done: paused ? `${q.name} is paused.` : `${q.name} is running again.`,
      onDone: queues.reload,
    });
  };
  return (
    <section>
      <div className="titlebar">
        <h1>Queues</h1>
        <span aria-live="polite">updated {ago(queues.at ?? null, now)}</span>
        <Button onClick={queues.reload}>Refresh</Button>
      </div>
      <ErrorNote error={queues.error} />
      {confirm.element}
      <BarChart
        title="Jobs waiting or active per queue"
        unit="Jobs"
        bars={data.map((q) => ({ label: q.name, value: (q.counts.waiting ?? 0) + (q.counts.active ?? 0) }))}
      />
      <table className="cards">
        <caption className="sr-only">Queue counts</caption>
        <thead>
          <tr>
            <th scope="col">Queue</th>
            {STATES.map((s) => (
              <th scope="col" key={s} className={SECONDARY.has(s) ? 'wide' : undefined}>
                {s}
              </th>
            ))}
            <th scope="col">Workers</th>
            <th scope="col">Processing</th>
          </tr>
        </thead>
        <tbody>
          {data.map((q) => (
            <tr key={q.name}>
              <td className="mono" data-label="Queue">
                {q.name}
              </td>
              {STATES.map((s) => (
                <td key={s} className={SECONDARY.has(s) ? 'wide' : undefined} data-label={s}>
                  {q.counts[s] ?? 0}
                </td>
              ))}
              <td data-label="Workers">
                {q.workers === 0 && (q.counts.waiting ?? 0) > 0 ? (
                  <span className="badge danger">no workers</span>
                ) : (
                  q.workers
                )}
              </td>
              <td data-label="Processing">
                <div className="actions">
                  {q.paused ? (
                    <span className="badge danger">paused</span>
                  ) : (
                    <span className="badge ok">running</span>
                  )}
                  <Button
                    kind={q.paused ? 'primary' : 'plain'}
                    disabled={!canWrite}
                    reason={READ_ONLY_REASON}
                    onClick={() => setPaused(q, !q.paused)}
                    label={q.paused ? `Resume ${q.name}` : `Pause ${q.name}`}
                  >
                    {q.paused ? 'Resume' : 'Pause'}
                  </Button>
                </div>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {data.length ? <FindJob queues={data.map((q) => q.name)} /> : null}
      {data.length ? (
        <Jobs queues={data.map((q) => q.name)} params={props.params} onChange={queues.reload} />
      ) : null}
    </section>
  );
}

const JOB_STATES = ['failed', 'waiting', 'active', 'delayed', 'completed'] as const;

/** Jobs of one queue in one state (failed by default): error, retry, remove. */
function Jobs(props: { queues: string[]; params: URLSearchParams; onChange: () => void }) {
  const canWrite = useCanWrite();
  const queue = props.params.get('queue') ?? props.queues[0] ?? '';
  const state = props.params.get('state') ?? 'failed';
  const [failure, setFailure] = useState<unknown>(null);
  const [removing, setRemoving] = useState<QueueJobView | null>(null);
  const jobs = useLoad(
    () =>
      api<{ data: QueueJobView[]; total: number }>(
        'GET',
        `/admin/queues/${encodeURIComponent(queue)}/jobs${query({ state, limit: 50 })}`,
      ),
    `${queue}|${state}`,
    10_000,
  );
  const [done, setDone] = useState('');
  const act = async (method: string, path: string, doneText: string) => {
    setFailure(null);
    setDone('');
    try {
      await api(method, path);
      setDone(doneText);
    } catch (error) {
      setFailure(error);
    }
    jobs.reload();
    props.onChange();
  };
  const jobPath = (j: QueueJobView) =>
    `/admin/queues/${encodeURIComponent(j.queue)}/jobs/${encodeURIComponent(j.id)}`;
  return (
    <>
      <h2>Jobs</h2>
      <div className="filters">
        <Field
          label="Queue"
          name="queue"
          value={queue}
          options={props.queues}
          onChange={(v) => navigate('queues', { queue: v, state })}
        />
        <Field
          label="State"
          name="state"
          value={state}
          options={JOB_STATES}
          onChange={(v) => navigate('queues', { queue, state: v })}
        />
      </div>
      <ErrorNote error={jobs.error ?? failure} />
      <p role="status" className={done ? 'notice' : 'sr-only'}>
        {done}
      </p>
      <p>
        {jobs.data ? `${jobs.data.total} ${state} job(s)` : ''}
        {jobs.data && jobs.data.total > jobs.data.data.length
          ? `, the latest ${jobs.data.data.length} shown`
          : ''}
      </p>
      <table className="cards">
        <caption className="sr-only">{`${state} jobs of ${queue}`}</caption>
        <thead>
          <tr>
            <th scope="col">Job</th>
            <th scope="col">Name</th>
            <th scope="col">Error</th>
            <th scope="col">Attempts</th>
            <th scope="col" className="wide">
              Created
            </th>
            <th scope="col">Actions</th>
          </tr>
        </thead>
        <tbody>
          {(jobs.data?.data ?? []).map((j) => (
            <tr key={j.id}>
              <td className="mono" data-label="Job">
                {j.id}
              </td>
              <td data-label="Name">{j.name}</td>
              <td data-label="Error">
                <span>
                  {j.error?.message ?? '-'}
                  {j.state === 'failed' && !j.retryable ? (
                    <>
                      {' '}
                      <span className="badge danger">cannot succeed</span>
                    </>
                  ) : null}
                </span>
              </td>
              <td data-label="Attempts">{j.attempts_made}</td>
              <td className="wide" data-label="Created">
                {utc(j.created_at)}
              </td>
              <td data-label="Actions">
                <div className="actions">
                  {j.state === 'failed' ? (
                    <Button
                      disabled={!canWrite || !j.retryable}
                      reason={
                        canWrite
                          ? 'Its error is final (a client error, a timeout or a cancel): a retry would fail the same way.'
                          : READ_ONLY_REASON
                      }
                      onClick={() => act('POST', `${jobPath(j)}/retry`, `Job ${j.id} is queued again.`)}
                      label={`Retry job ${j.id}`}
                    >
                      Retry
                    </Button>
                  ) : null}
                  <Button
                    kind="danger"
                    disabled={!canWrite || j.state === 'active'}
                    reason={READ_ONLY_REASON}
                    onClick={() => setRemoving(j)}
                    label={`Remove job ${j.id}`}
                  >
                    Remove
                  </Button>
                </div>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      <Dialog open={Boolean(removing)} title="Remove this job?" onClose={() => setRemoving(null)}>
        <p>
          Job <span className="mono">{removing?.id}</span> ({removing?.name}) of {removing?.queue} is deleted
          from the queue. It cannot be retried afterwards.
        </p>
        <div className="actions">
          <Button onClick={() => setRemoving(null)}>Cancel</Button>
          <Button
            kind="danger"
            onClick={() => {
              const j = removing;
              setRemoving(null);
              if (j) void act('DELETE', jobPath(j), `Job ${j.id} is removed.`);
            }}
          >
            Remove job
          </Button>
        </div>
      </Dialog>
    </>
  );
}

/** A stack trace, folded until asked for (its long paths fit no phone). */
function StackTrace(props: { text: string }) {
  const [open, setOpen] = useState(false);
  return (
    <details onToggle={(e) => setOpen(e.currentTarget.open)}>
      <summary>The last attempt's stack trace</summary>
      {open ? <pre className="mono">{props.text}</pre> : null}
    </details>
  );
}

/** Finds one job by id in a queue: state, attempts, error and stack, a summary of its data. */
function FindJob(props: { queues: string[] }) {
  const [queue, setQueue] = useState(props.queues[0] ?? '');
  const [id, setId] = useState('');
  const [job, setJob] = useState<QueueJobDetail | null>(null);
  const [failure, setFailure] = useState<unknown>(null);
  const find = async (e: FormEvent) => {
    e.preventDefault();
    setJob(null);
    setFailure(null);
    if (!id.trim()) {
      setFailure(new Error('Enter a job id.'));
      return;
    }
    try {
      setJob(
        await api<QueueJobDetail>(
          'GET',
          `/admin/queues/${encodeURIComponent(queue)}/jobs/${encodeURIComponent(id.trim())}`,
        ),
      );
    } catch (error) {
      setFailure(error);
    }
  };
  return (
    <section aria-labelledby="find-job">
      <h2 id="find-job">Find a job</h2>
      <form className="filters" onSubmit={find} noValidate aria-label="Find a job">
        <Field label="Queue" name="find-queue" value={queue} options={props.queues} onChange={setQueue} />
        <Field label="Job id" name="job-id" value={id} onChange={setId} />
        <Button type="submit">Find job</Button>
      </form>
      <ErrorNote error={failure} />
      {job ? (
        <dl className="facts" aria-label={`Job ${job.id}`}>
          <dt>Job</dt>
          <dd>
            <span className="mono nowrap">
              {job.queue}/{job.id}
            </span>{' '}
            ({job.name})
          </dd>
          <dt>State</dt>
          <dd data-testid="job-state">{job.state}</dd>
          <dt>Attempts</dt>
          <dd>
            {Math.min(job.attempts_made, job.attempts_allowed)} of {job.attempts_allowed}
          </dd>
          <dt>Created</dt>
          <dd>{utc(job.created_at)}</dd>
          <dt>Finished</dt>
          <dd>{job.finished_at ? utc(job.finished_at) : '-'}</dd>
          <dt>Error</dt>
          <dd>
            {job.error ? (
              <>
                {job.error.message}
                {job.error.code ? (
                  <>
                    {' '}
                    <span className="mono">({job.error.code})</span>
                  </>
                ) : null}
                {job.state === 'failed' && !job.retryable ? (
                  <p className="error">
                    This job cannot succeed: its error is final, and a retry would fail the same way.
                  </p>
                ) : null}
              </>
            ) : (
              '-'
            )}
          </dd>
          {job.stacktrace.length ? (
            <>
              <dt>Stack</dt>
              <dd>
                <StackTrace text={job.stacktrace.at(-1) ?? ''} />
              </dd>
            </>
          ) : null}
          <dt>Data</dt>
          <dd>
            <ul className="plain-list">
              {Object.entries(job.data_summary).map(([k, v]) => (
                <li key={k}>
                  <span className="mono">{k}</span>: {v}
                </li>
              ))}
            </ul>
          </dd>
        </dl>
      ) : null}
    </section>
  );
}
