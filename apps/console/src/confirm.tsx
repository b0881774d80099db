// Asking before a consequential change, for every page: `useConfirm()` gives `ask(...)`, which opens
// a modal saying what will happen, runs the action only on the explicit button (Escape and Cancel
// change nothing), shows "Working…" while it runs, keeps the dialog open with the failure in
// sentences when it fails, and after success closes it and says what was done (a polite live
// region where `element` is placed).
import { type ReactNode, useCallback, useState } from 'react';
import { ApiFailure } from './api.js';
import { Button, Dialog } from './ui.js';

export interface ConfirmRequest {
  /** The question, naming the thing ("Revoke key sk-inf-ab12?"). */
  title: ReactNode;
  /** What will happen, in sentences. */
  body: ReactNode;
  /** The button that acts, naming the action ("Revoke key"). */
  confirmLabel: string;
  /** Red button (the change is destructive or cuts someone off). */
  danger?: boolean;
  /** The change. A thrown error is shown in the dialog, which stays open. */
  action: () => Promise<unknown>;
  /** What was done, shown after success ("Key sk-inf-ab12 revoked."). */
  done: string;
  /** After success (e.g. reload the page's data). */
  onDone?: (result: unknown) => void;
}

/** A failure as a sentence: the API's message, or a plain word on the network. */
export function failureSentence(error: unknown): string {
  if (error instanceof ApiFailure) return sentence(error.message);
  if (error instanceof TypeError) return 'The server could not be reached. Nothing was changed.';
  return sentence(error instanceof Error ? error.message : String(error));
}

/** Capitalised, ending with a full stop. */
export function sentence(text: string): string {
  const t = text.trim();
  if (!t) return t;
  const first = t[0]?.toUpperCase() + t.slice(1);
  return /[.!?…]$/.test(first) ? first : `${first}.`;
}

export function useConfirm(): { ask: (r: ConfirmRequest) => void; element: ReactNode } {
  const [request, setRequest] = useState<ConfirmRequest | null>(null);
  const [busy, setBusy] = useState(false);
  const [failure, setFailure] = useState<string | null>(null);
  const [notice, setNotice] = useState<string>('');
  const ask = useCallback((r: ConfirmRequest) => {
    setFailure(null);
    setNotice('');
    setRequest(r);
  }, []);
  const close = () => {
    if (busy) return;
    setRequest(null);
    setFailure(null);
  };
  const run = async () => {
    if (!request || busy) return;
    setBusy(true);
    setFailure(null);
    try {
      const result = await request.action();
      setRequest(null);
      setNotice(request.done);
      request.onDone?.(result);
    } catch (error) {
      setFailure(failureSentence(error));
    } finally {
      setBusy(false);
    }
  };
  const element = (
    <>
      <p role="status" className={notice ? 'notice' : 'sr-only'}>
        {notice}
      </p>
      <Dialog open={Boolean(request)} title={request?.title ?? ''} onClose={close}>
        <div className="confirm-body">{request?.body}</div>
        {failure ? (
          <p className="error" role="alert">
            {failure}
          </p>
        ) : null}
        <div className="actions">
          <Button onClick={close} disabled={busy}>
            Cancel
          </Button>
          <Button kind={request?.danger ? 'danger' : 'primary'} onClick={() => void run()} disabled={busy}>
            {busy ? 'Working…' : (request?.confirmLabel ?? '')}
          </Button>
        </div>
      </Dialog>
    </>
  );
  return { ask, element };
}
