// A small path router for the console's handful of pages: the path below /console/ picks the
// page, the query string holds filters and paging (so a view can be shared).
import { useEffect, useState } from 'react';

const BASE = '/console/';

export interface Route {
  path: string;
  params: URLSearchParams;
}

function current(): Route {
  const p = window.location.pathname;
  const path = p.startsWith(BASE) ? p.slice(BASE.length).replace(/\/+$/, '') : '';
  return { path, params: new URLSearchParams(window.location.search) };
}

const listeners = new Set<() => void>();

export function navigate(path: string, params?: Record<string, string | undefined>, replace = false): void {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params ?? {})) if (v) q.set(k, v);
  const url = `${BASE}${path}${q.size ? `?${q}` : ''}`;
  if (replace) window.history.replaceState(null, '', url);
  else window.history.pushState(null, '', url);
  for (const l of listeners) l();
}

export function useRoute(): Route {
  const [route, setRoute] = useState(current);
  useEffect(() => {
    const update = () => setRoute(current());
    listeners.add(update);
    window.addEventListener('popstate', update);
    return () => {
      listeners.delete(update);
      window.removeEventListener('popstate', update);
    };
  }, []);
  return route;
}

export function Link(props: {
  to: string;
  children: React.ReactNode;
  current?: boolean;
  /** A tooltip (the full id when the text is shortened). */
  title?: string;
}) {
  return (
    <a
      href={`${BASE}${props.to}`}
      aria-current={props.current ? 'page' : undefined}
      title={props.title}
      onClick={(e) => {
        if (e.metaKey || e.ctrlKey || e.shiftKey || e.button !== 0) return;
        e.preventDefault();
        navigate(props.to);
      }}
    >
      {props.children}
    </a>
  );
}
