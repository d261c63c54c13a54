// The start form of a console service (the simulator, the trap receiver): it shows the
// configuration in use (or last used) whenever the service changes state, but what the user typed
// is theirs until they start it. A state that arrives late (the socket's first full_state, a
// reconnect) must not put the old port back under their cursor.
import { useEffect, useRef, useState } from 'preact/hooks';

interface ServiceState {
  state: string;
  port: number;
}

export function useServiceForm<F, S extends ServiceState>(initial: F, status: S | undefined, fromStatus: (status: S, form: F) => F) {
  const [form, setFormState] = useState<F>(initial);
  const edited = useRef(false);
  const setForm = (f: F) => {
    edited.current = true;
    setFormState(f);
  };
  useEffect(() => {
    if (!status || (edited.current && status.state !== 'running')) return;
    setFormState((f) => fromStatus(status, f));
    // eslint-disable-next-line react-hooks/exhaustive-deps -- on a change of state or port only: every status push (uptime, counters) would undo what the user is typing
  }, [status?.state, status?.port]);
  /** Called as the user starts the service: from then on, its state fills the form again. */
  const submitted = () => {
    edited.current = false;
  };
  return { form, setForm, submitted };
}
