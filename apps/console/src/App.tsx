import type { SessionView } from '@infer/contracts';
import { useCallback, useEffect, useState } from 'react';
import { ApiFailure, api, onSessionEnded, setCsrfToken } from './api.js';
import { AlertsPage } from './pages/Alerts.js';
import { AuditPage } from './pages/Audit.js';
import { KeysPage } from './pages/Keys.js';
import { LogsPage } from './pages/Logs.js';
import { MemberDetailPage } from './pages/MemberDetail.js';
import { MembersPage } from './pages/Members.js';
import { ModelsPage } from './pages/Models.js';
import { OperatorsPage } from './pages/Operators.js';
import { OverviewPage } from './pages/Overview.js';
import { QueuesPage } from './pages/Queues.js';
import { SearchPage } from './pages/Search.js';
import { UsagePage } from './pages/Usage.js';
import { Link, navigate, useRoute } from './router.js';
import { SignIn } from './SignIn.js';
import { SessionContext } from './session.js';
import { Button } from './ui.js';

const NAV: Array<[string, string, boolean?]> = [
  ['', 'Overview'],
  ['members', 'Members'],
  ['keys', 'Keys'],
  ['models', 'Models'],
  ['usage', 'Usage'],
  ['alerts', 'Alerts'],
  ['logs', 'Logs'],
  ['queues', 'Queues'],
  ['search', 'Search index'],
  ['audit', 'Audit log'],
  ['operators', 'Operators', true],
];

export function App() {
  const [session, setSession] = useState<SessionView | null | undefined>(undefined);
  const adopt = useCallback((s: SessionView | null) => {
    setCsrfToken(s?.csrf_token ?? '');
    setSession(s);
  }, []);
  useEffect(() => {
    onSessionEnded(() => adopt(null));
    api<SessionView>('GET', '/admin/session').then(adopt, () => adopt(null));
  }, [adopt]);

  if (session === undefined) return <p className="loading">Loading…</p>;
  if (session === null) return <SignIn onSignedIn={adopt} />;
  return (
    <SessionContext.Provider value={session}>
      <Shell session={session} onSignedOut={() => adopt(null)} />
    </SessionContext.Provider>
  );
}

function Shell(props: { session: SessionView; onSignedOut: () => void }) {
  const route = useRoute();
  const [menuOpen, setMenuOpen] = useState(false);
  const top = route.path.split('/')[0] ?? '';
  const role = props.session.operator.role;
  const signOut = async () => {
    try {
      await api('DELETE', '/admin/session');
    } catch (error) {
      if (!(error instanceof ApiFailure) || error.status !== 401) throw error;
    }
    props.onSignedOut();
    navigate('', undefined, true);
  };
  return (
    <div className="shell">
      <a className="skip" href="#main">
        Skip to content
      </a>
      <header>
        <span className="brand">Operator console</span>
        <button
          type="button"
          className="btn plain menu"
          aria-expanded={menuOpen}
          aria-controls="nav"
          onClick={() => setMenuOpen(!menuOpen)}
        >
          Menu
        </button>
        <span className="who">
          {props.session.operator.email} <span className={`badge role-${role}`}>{role}</span>
        </span>
        <Button onClick={signOut}>Sign out</Button>
      </header>
      <nav id="nav" aria-label="Pages" className={menuOpen ? 'open' : ''}>
        <ul>
          {NAV.filter(([, , ownerOnly]) => !ownerOnly || role === 'owner').map(([path, label]) => (
            <li key={path}>
              <Link to={path} current={top === path}>
                {label}
              </Link>
            </li>
          ))}
        </ul>
      </nav>
      <main id="main">
        <Page path={route.path} params={route.params} />
      </main>
    </div>
  );
}

function Page(props: { path: string; params: URLSearchParams }) {
  const [top, id] = props.path.split('/');
  switch (top) {
    case '':
      return <OverviewPage />;
    case 'members':
      return id ? <MemberDetailPage id={decodeURIComponent(id)} /> : <MembersPage params={props.params} />;
    case 'keys':
      return <KeysPage params={props.params} />;
    case 'models':
      return <ModelsPage />;
    case 'usage':
      return <UsagePage params={props.params} />;
    case 'alerts':
      return <AlertsPage params={props.params} />;
    case 'logs':
      return <LogsPage params={props.params} />;
    case 'queues':
      return <QueuesPage params={props.params} />;
    case 'search':
      return <SearchPage params={props.params} />;
    case 'audit':
      return <AuditPage params={props.params} />;
    case 'operators':
      return <OperatorsPage />;
    default:
      return (
        <section>
          <h1>Not found</h1>
          <p>
            No page here. <Link to="">Go to the overview</Link>.
          </p>
        </section>
      );
  }
}
