// One MIB node: breadcrumb (each crumb selects that node), the compiled fields, the description
// (MIB text: text only), children, notification members and the notifications carrying it, and
// "Walk from here" (the walker with this OID filled in).
import { Fragment } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { consoleApi, type MibNodeDetail } from '../../api/console.js';
import { Notice } from '../../components/notice.js';
import { href } from '../../lib/router.js';

export function MibNode({ oid, link }: { oid: string; link: (oid: string) => string }) {
  const [node, setNode] = useState<MibNodeDetail>();
  const [error, setError] = useState<string>();
  useEffect(() => {
    setError(undefined);
    consoleApi
      .mibNode(oid)
      .then(setNode)
      .catch((e: Error) => {
        setNode(undefined);
        setError(e.message);
      });
  }, [oid]);
  if (error) return <Notice tone="error">{error}</Notice>;
  if (!node) return <p class="muted">Loading…</p>;

  const syntax = node.syntax;
  const enums = syntax?.enums
    ? Object.entries(syntax.enums)
        .map(([k, v]) => `${k}(${v})`)
        .join(', ')
    : undefined;
  const facts: [string, string | undefined][] = [
    ['OID', node.oid],
    ['Module', node.module ?? undefined],
    ['Kind', node.kind],
    [
      'Syntax',
      syntax
        ? [syntax.tc ?? syntax.type, syntax.base && syntax.base !== (syntax.tc ?? syntax.type) ? `(${syntax.base})` : ''].filter(Boolean).join(' ')
        : undefined,
    ],
    ['Values', enums],
    ['Display hint', syntax?.displayHint],
    ['Units', node.units],
    ['Access', node.access],
    ['Status', node.status],
    ['Index', node.index ? fmtList(node.index) : undefined],
    ['Augments', node.augments ? fmtList(node.augments) : undefined],
    ['Also defined in', node.alsoDefinedIn.length ? node.alsoDefinedIn.join(', ') : undefined],
  ];
  return (
    <div class="card" data-testid="mib-node">
      <nav class="breadcrumb" aria-label="breadcrumb">
        {node.breadcrumb.map((c, i) => (
          <Fragment key={c.oid}>
            {i > 0 && <span class="muted"> › </span>}
            {i === node.breadcrumb.length - 1 ? (
              <span aria-current="page">{c.name ?? c.oid}</span>
            ) : (
              <a href={link(c.oid)}>{c.name ?? c.oid.split('.').pop()}</a>
            )}
          </Fragment>
        ))}
      </nav>
      <div class="section-head">
        <h2 class="mono">
          {node.module ? `${node.module}::` : ''}
          {node.name}
        </h2>
        <a class="button" href={href(['walker'], { oid: node.oid })}>
          Walk from here
        </a>
      </div>
      <dl class="facts plain">
        {facts
          .filter(([, v]) => v !== undefined && v !== '')
          .map(([k, v]) => (
            <Fragment key={k}>
              <dt>{k}</dt>
              <dd class={k === 'OID' ? 'mono' : ''}>{v}</dd>
            </Fragment>
          ))}
      </dl>
      {node.description && <p class="mib-description">{node.description}</p>}
      {node.members && node.members.length > 0 && (
        <>
          <h3>Objects sent with it</h3>
          <ul class="plain-list">
            {node.members.map((m) => (
              <li key={`${m.module}::${m.name}`} class="mono">
                {m.oid ? <a href={link(m.oid)}>{`${m.module}::${m.name}`}</a> : `${m.module}::${m.name}`}
                {m.resolved === false && <span class="muted"> (not loaded)</span>}
              </li>
            ))}
          </ul>
        </>
      )}
      {node.usedInNotifications.length > 0 && (
        <>
          <h3>Sent with notifications</h3>
          <ul class="plain-list">
            {node.usedInNotifications.map((n) => (
              <li key={n.oid} class="mono">
                <a href={link(n.oid)}>{`${n.module}::${n.name}`}</a>
              </li>
            ))}
          </ul>
        </>
      )}
      {node.children.length > 0 && (
        <>
          <h3>Children ({node.children.length})</h3>
          <ul class="plain-list">
            {node.children.map((c) => (
              <li key={c.oid}>
                <a class="mono" href={link(c.oid)}>
                  {c.name ?? c.oid}
                </a>{' '}
                <span class="muted small">
                  {c.oid}
                  {c.kind ? ` · ${c.kind}` : ''}
                </span>
              </li>
            ))}
          </ul>
        </>
      )}
    </div>
  );
}

function fmtList(v: unknown): string {
  if (Array.isArray(v)) return v.map((x) => (typeof x === 'object' && x !== null ? fmtRef(x as Record<string, unknown>) : String(x))).join(', ');
  if (typeof v === 'object' && v !== null) return fmtRef(v as Record<string, unknown>);
  return String(v);
}

function fmtRef(x: Record<string, unknown>): string {
  const name = typeof x.name === 'string' ? x.name : JSON.stringify(x);
  return `${x.implied ? 'IMPLIED ' : ''}${typeof x.module === 'string' ? `${x.module}::` : ''}${name}`;
}
