// Live data by polling (the daemon has no event stream): load now, then every `ms` while the tab is
// visible; a hidden tab polls nothing and catches up when shown again.
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';

export interface Polled<T> {
  data: T | undefined;
  error: string | undefined;
  loading: boolean;
  refresh: () => Promise<void>;
}

export function usePoll<T>(load: () => Promise<T>, ms: number, deps: unknown[] = []): Polled<T> {
  const [data, setData] = useState<T>();
  const [error, setError] = useState<string>();
  const [loading, setLoading] = useState(true);
  const loadRef = useRef(load);
  loadRef.current = load;
  // Answers of an older request must not overwrite a newer one (filters changed in between).
  const generation = useRef(0);

  const refresh = useCallback(async () => {
    const mine = ++generation.current;
    try {
      const v = await loadRef.current();
      if (mine !== generation.current) return;
      setData(v);
      setError(undefined);
    } catch (e) {
      if (mine !== generation.current) return;
      setError((e as Error).message);
    } finally {
      if (mine === generation.current) setLoading(false);
    }
  }, []);

  useEffect(() => {
    setLoading(true);
    void refresh();
    if (ms <= 0) return;
    const timer = setInterval(() => {
      if (document.visibilityState === 'visible') void refresh();
    }, ms);
    const onVisible = () => document.visibilityState === 'visible' && void refresh();
    document.addEventListener('visibilitychange', onVisible);
    return () => {
      clearInterval(timer);
      document.removeEventListener('visibilitychange', onVisible);
    };
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [ms, ...deps]);

  return { data, error, loading, refresh };
}
