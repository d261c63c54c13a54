// A labelled <select> of a filter bar: options as plain values or {value, label}, and an optional
// first option for "any" (the empty value).
export type SelectOption = string | { value: string; label: string };

export function SelectField(props: {
  label: string;
  name: string;
  value: string;
  options: readonly SelectOption[];
  any?: string;
  onChange(value: string): void;
}) {
  return (
    <label>
      {props.label}
      <select name={props.name} value={props.value} onChange={(e) => props.onChange(e.currentTarget.value)}>
        {props.any !== undefined && <option value="">{props.any}</option>}
        {props.options.map((o) => {
          const { value, label } = typeof o === 'string' ? { value: o, label: o } : o;
          return (
            <option key={value} value={value}>
              {label}
            </option>
          );
        })}
      </select>
    </label>
  );
}
