import type { SessionView } from '@infer/contracts';
import { createContext, useContext } from 'react';

export const SessionContext = createContext<SessionView | null>(null);

export function useSession(): SessionView {
  const s = useContext(SessionContext);
  if (!s) throw new Error('useSession outside a signed-in console');
  return s;
}

/** Whether the signed-in operator may change the platform (admin, owner). */
export function useCanWrite(): boolean {
  return useSession().operator.role !== 'viewer';
}

export const READ_ONLY_REASON = 'Your role (viewer) can read but not change anything.';
