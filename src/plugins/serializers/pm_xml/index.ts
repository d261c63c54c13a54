import { isAscii } from 'node:buffer';
import { Type } from '@sinclair/typebox';
import { defineSerializer } from '../../types.js';
import { decoderFor, lintEncoding } from '../../common/text.js';
import { PmXmlDecoder } from './decode.js';
import { splitPmXml } from './split.js';

const config = Type.Object(
  {
    encoding: Type.String({
      default: 'utf-8',
      description: 'Character encoding of the files; an ASCII-compatible one (utf-8, latin1, windows-1252, iso-8859-x). The XML declaration is not consulted.',
    }),
    add_managed_element: Type.Boolean({
      default: true,
      description: 'Add managed_element (managedElement localDn), user_label and sw_version to every record.',
    }),
    add_duration: Type.Boolean({
      default: false,
      description: 'Add gran_period_s and rep_period_s: the granPeriod and repPeriod durations (PT900S, PT15M) in seconds.',
    }),
    numeric_values: Type.Boolean({
      default: true,
      description:
        'Counter values that are decimal numbers become numbers (floats); others (PDF lists "1,2,3", text) stay strings. Empty and NIL values are null either way.',
    }),
  },
  { additionalProperties: false },
);

function textOf(encoding: string): (b: Buffer) => string {
  const e = encoding.toLowerCase().replace(/_/g, '-');
  // ASCII is the usual content; latin1 decoding of ASCII bytes is the fastest exact path.
  if (e === 'utf-8' || e === 'utf8') return (b) => (isAscii(b) ? b.toString('latin1') : b.toString('utf8'));
  return decoderFor(encoding);
}

const EXAMPLE = `<?xml version="1.0" encoding="UTF-8"?>
<measCollecFile xmlns="http://www.3gpp.org/ftp/specs/archive/32_series/32.435#measCollec">
  <fileHeader fileFormatVersion="32.435 V10.0" vendorName="Company NN">
    <fileSender localDn="DC=a1.companyNN.com,SubNetwork=1,IRPAgent=1"/>
    <measCollec beginTime="2000-03-01T14:00:00+02:00"/>
  </fileHeader>
  <measData>
    <managedElement localDn="ManagedElement=1" userLabel="RNC Telecomville"/>
    <measInfo measInfoId="UtranCell">
      <job jobId="1231"/>
      <granPeriod duration="PT900S" endTime="2000-03-01T14:14:30+02:00"/>
      <repPeriod duration="PT1800S"/>
      <measType p="1">attTCHSeizures</measType>
      <measType p="2">succTCHSeizures</measType>
      <measValue measObjLdn="RncFunction=RF-1,UtranCell=Gbg-997">
        <r p="1">234</r>
        <r p="2">NIL</r>
      </measValue>
      <measValue measObjLdn="RncFunction=RF-1,UtranCell=Gbg-998">
        <r p="1">890</r>
        <r p="2">901</r>
        <suspect>true</suspect>
      </measValue>
    </measInfo>
  </measData>
  <fileFooter>
    <measCollec endTime="2000-03-01T14:15:00+02:00"/>
  </fileFooter>
</measCollecFile>
`;

const HEAD = {
  file_format_version: '32.435 V10.0',
  vendor_name: 'Company NN',
  sender: 'DC=a1.companyNN.com,SubNetwork=1,IRPAgent=1',
  begin_time: '2000-03-01T14:00:00+02:00',
};
const MI = { meas_info_id: 'UtranCell', job_id: '1231' };
const END = { gran_end_time: '2000-03-01T14:14:30+02:00' };
const ME = { managed_element: 'ManagedElement=1', user_label: 'RNC Telecomville' };
const values = (ctx: object) => [
  { ...ctx, meas_obj_ldn: 'RncFunction=RF-1,UtranCell=Gbg-997', attTCHSeizures: 234, succTCHSeizures: null },
  { ...ctx, meas_obj_ldn: 'RncFunction=RF-1,UtranCell=Gbg-998', suspect: true, attTCHSeizures: 890, succTCHSeizures: 901 },
];

const LIST_EXAMPLE = `<?xml version="1.0"?>
<pm:measCollecFile xmlns:pm="http://www.3gpp.org/ftp/specs/archive/32_series/32.435#measCollec">
  <pm:fileHeader fileFormatVersion="32.435 V7.0" vendorName="Vendor"><pm:measCollec beginTime="2024-05-01T10:00:00Z"/></pm:fileHeader>
  <pm:measData>
    <pm:managedElement localDn="NE-7"/>
    <pm:measInfo>
      <pm:granPeriod duration="PT15M" endTime="2024-05-01T10:15:00Z"/>
      <pm:measTypes>pmRrcAtt pmRrcSucc</pm:measTypes>
      <pm:measValue measObjLdn="Cell=1"><pm:measResults>17 16</pm:measResults></pm:measValue>
    </pm:measInfo>
  </pm:measData>
</pm:measCollecFile>
`;

export default defineSerializer({
  key: 'pm_xml',
  summary:
    '3GPP TS 32.435 measurement collection files (XML), one flat record per measValue with its counters as fields; streamed, truncated files closed automatically.',
  direction: 'in',
  config,
  lint: (c) => {
    const bad = lintEncoding(c.encoding);
    if (bad.length) return bad;
    const e = new TextDecoder(c.encoding.toLowerCase().replace(/_/g, '-')).encoding;
    // The splitter looks for ASCII markup bytes: only ASCII-compatible encodings can be cut.
    if (e.startsWith('utf-16'))
      return [
        {
          path: 'encoding',
          message: `encoding "${c.encoding}" is not ASCII-compatible; PM XML files are read in utf-8, latin1 or a similar single-byte encoding`,
        },
      ];
    return [];
  },
  examples: [
    { title: 'A 32.435 file (defaults)', yaml: 'type: pm_xml', worked: { input: EXAMPLE, records: values({ ...HEAD, ...ME, ...MI, ...END }) } },
    {
      title: 'Durations in seconds, without the managed element fields',
      yaml: 'type: pm_xml\nadd_duration: true\nadd_managed_element: false',
      worked: { input: EXAMPLE, records: values({ ...HEAD, ...MI, gran_period_s: 900, ...END, rep_period_s: 1800 }) },
    },
    {
      title: 'The measTypes / measResults list variant, with a namespace prefix',
      yaml: 'type: pm_xml',
      worked: {
        input: LIST_EXAMPLE,
        records: [
          {
            file_format_version: '32.435 V7.0',
            vendor_name: 'Vendor',
            begin_time: '2024-05-01T10:00:00Z',
            managed_element: 'NE-7',
            gran_end_time: '2024-05-01T10:15:00Z',
            meas_obj_ldn: 'Cell=1',
            pmRrcAtt: 17,
            pmRrcSucc: 16,
          },
        ],
      },
    },
  ],
  decoder: (c) => {
    const opts = { addManagedElement: c.add_managed_element, addDuration: c.add_duration, numeric: c.numeric_values, toText: textOf(c.encoding) };
    return {
      framing: { kind: 'split', split: splitPmXml },
      decode({ data, header, firstLine }, out) {
        new PmXmlDecoder(opts, out).decode(data, header, firstLine);
      },
    };
  },
});
