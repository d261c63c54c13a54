import { Type } from '@sinclair/typebox';
import { defineTransform, type Rec } from '../../types.js';
import { setField } from '../../common/record.js';
import { Aggregator, aggregationsField, groupByField, groupKey, groupValues, lintAggregations, type Acc } from '../../common/aggregations.js';

const config = Type.Object(
  {
    group_by: groupByField,
    aggregations: aggregationsField,
    scope: Type.Union([Type.Literal('unit'), Type.Literal('run')], {
      default: 'unit',
      description:
        'unit: one result per group for each input file (or message batch); run: one per group for the whole run (batch schedules only; input files are finalized once the results are written).',
    }),
    max_groups: Type.Integer({
      minimum: 1,
      default: 100000,
      description: 'Groups held at once; a record that would open one more is a recorded error (rule 6).',
    }),
  },
  { additionalProperties: false },
);

export default defineTransform({
  key: 'aggregate',
  summary: 'Group records and compute count/sum/min/max/avg/first/last/count_distinct/percentile per group; one record out per group.',
  config,
  defersUnits: (c) => c.scope === 'run',
  lint: (c) => lintAggregations(c),
  examples: [
    {
      title: 'Traffic per router and interface in each PM file',
      yaml: 'type: aggregate\ngroup_by: [host, ifIndex]\naggregations:\n  - { function: sum, field: in_octets }\n  - { function: max, field: in_octets, as: peak_in }\n  - { function: count }',
    },
    {
      title: 'Latency percentiles per cell over the whole run',
      yaml: 'type: aggregate\ngroup_by: [cell_id]\nscope: run\naggregations:\n  - { function: percentile, field: latency_ms, percentile: 95 }\n  - { function: avg, field: latency_ms }',
    },
  ],
  create(c) {
    const groupBy = c.group_by ?? [];
    const agg = new Aggregator(c.aggregations);
    const max = c.max_groups ?? 100000;
    const scope = c.scope ?? 'unit';
    // Insertion order: groups come out in the order their first record came in.
    let groups = new Map<string, { values: unknown[]; accs: Acc[] }>();
    return {
      // Each record is taken into its group; the groups come out at the drain.
      holdsRecords: true,
      apply(r: Rec) {
        const k = groupKey(groupBy, r);
        let g = groups.get(k);
        if (g === undefined) {
          if (groups.size >= max) throw new Error(`more than max_groups (${max}) groups; raise max_groups or group by fewer fields`);
          g = { values: groupValues(groupBy, r), accs: agg.fresh() };
          agg.add(g.accs, r);
          groups.set(k, g);
        } else agg.add(g.accs, r);
        return null;
      },
      drain(at) {
        if (scope === 'run' && at === 'unit') return [];
        const out: Rec[] = [];
        for (const g of groups.values()) {
          const r: Rec = {};
          groupBy.forEach((f, i) => setField(r, f, g.values[i]));
          out.push(agg.results(g.accs, r));
        }
        groups = new Map();
        return out;
      },
    };
  },
});
