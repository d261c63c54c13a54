// One button action at a time: busy while it runs, then a notice that says what happened (the
// given text on success, the server's message on failure). `onResult` gets what the action returned.
import { useState } from 'preact/hooks';

export interface ActionNotice {
  tone: 'ok' | 'error';
  text: string;
}

export function useAction<T = unknown>(onResult?: (result: T) => void) {
  const [busy, setBusy] = useState(false);
  const [notice, setNotice] = useState<ActionNotice>();
  const act = async (what: string, f: () => Promise<T>) => {
    setBusy(true);
    setNotice(undefined);
    try {
      const result = await f();
      onResult?.(result);
      setNotice({ tone: 'ok', text: what });
    } catch (e) {
      setNotice({ tone: 'error', text: (e as Error).message });
    } finally {
      setBusy(false);
    }
  };
  return { busy, notice, setNotice, act };
}
