// Charging records for the tests: each case is the XER value that asn1c encodes and the record the
// serializer must produce from its encoding (mapping written out by hand, per docs/formats/asn1.md).
import { join } from 'node:path';
import type { Rec } from '../../src/plugins/types.js';

export const CDR_DIR = join(import.meta.dirname, '..', '..', 'examples', 'schemas', 'cdr');

export interface CdrCase {
  xer: string;
  record: Rec;
}

const hex2 = (n: number) => n.toString(16).padStart(2, '0');
/** TBCD (TS 29.002): digits swapped in pairs, an odd count padded with F. */
const tbcd = (digits: string) =>
  (digits.length % 2 ? digits + 'f' : digits)
    .match(/../g)!
    .map((d) => d[1]! + d[0]!)
    .join('');

/** Record i of a mixed file: SGW, PGW (with service data containers) and SMS records in turn. */
export function cdrCase(i: number): CdrCase {
  const imsiHex = tbcd(`262019${String(i).padStart(9, '0')}`);
  const ts = `2311${String(1 + (i % 28)).padStart(2, '0')}1230452b0100`;
  const tsXer = ts.toUpperCase();
  const kind = i % 3;
  if (kind === 2) {
    return {
      xer: `<CallEventRecord><smsRecord><recordType>84</recordType><servedIMSI>${imsiHex.toUpperCase()}</servedIMSI><eventTimeStamp>${tsXer}</eventTimeStamp><messageReference>${hex2(i % 256)}</messageReference><messageSize>${i % 160}</messageSize><smsType><mt/></smsType></smsRecord></CallEventRecord>`,
      record: {
        type: 'smsRecord',
        value: { recordType: 84, servedIMSI: imsiHex, eventTimeStamp: ts, messageReference: hex2(i % 256), messageSize: i % 160, smsType: 'mt' },
      },
    };
  }
  const addr = `0A00${hex2((i >> 8) & 255)}${hex2(i & 255)}`;
  const common = `<recordType>${kind === 0 ? 84 : 85}</recordType><servedIMSI>${imsiHex.toUpperCase()}</servedIMSI>`;
  const gw = `<iPBinaryAddress><iPBinV4Address>${addr}</iPBinV4Address></iPBinaryAddress>`;
  const gwRec = { type: 'iPBinaryAddress', value: { type: 'iPBinV4Address', value: addr.toLowerCase() } };
  if (kind === 0) {
    return {
      xer: `<CallEventRecord><sgwRecord>${common}<s-GWAddress>${gw}</s-GWAddress><chargingID>${i}</chargingID><servingNodeAddress>${gw}</servingNodeAddress><recordOpeningTime>${tsXer}</recordOpeningTime><duration>${i % 3600}</duration><causeForRecClosing>${i % 2 ? 16 : 0}</causeForRecClosing><chargingCharacteristics>0800</chargingCharacteristics><chChSelectionMode><homeDefault/></chChSelectionMode><rATType>6</rATType></sgwRecord></CallEventRecord>`,
      record: {
        type: 'sgwRecord',
        value: {
          recordType: 84,
          servedIMSI: imsiHex,
          's-GWAddress': gwRec,
          chargingID: i,
          servingNodeAddress: [gwRec],
          recordOpeningTime: ts,
          duration: i % 3600,
          causeForRecClosing: i % 2 ? 16 : 0,
          chargingCharacteristics: '0800',
          chChSelectionMode: 'homeDefault',
          rATType: 6,
        },
      },
    };
  }
  const n = 1 + (i % 4);
  const containers = Array.from({ length: n }, (_, k) => ({ ratingGroup: 100 + k, up: i * 1000 + k, down: (i * 1000 + k) * 7 }));
  return {
    xer: `<CallEventRecord><pgwRecord>${common}<p-GWAddress>${gw}</p-GWAddress><chargingID>${4000000000 + i}</chargingID><servingNodeAddress>${gw}</servingNodeAddress><accessPointNameNI>ims.mnc001.mcc262.gprs</accessPointNameNI><recordOpeningTime>${tsXer}</recordOpeningTime><duration>${i % 3600}</duration><causeForRecClosing>0</causeForRecClosing><chargingCharacteristics>0400</chargingCharacteristics><listOfServiceData>${containers
      .map(
        (c) =>
          `<ChangeOfServiceCondition><ratingGroup>${c.ratingGroup}</ratingGroup><serviceConditionChange>0000000001</serviceConditionChange><datavolumeFBCUplink>${c.up}</datavolumeFBCUplink><datavolumeFBCDownlink>${c.down}</datavolumeFBCDownlink><timeOfReport>${tsXer}</timeOfReport></ChangeOfServiceCondition>`,
      )
      .join('')}</listOfServiceData><servingNodeType><gTPSGW/></servingNodeType></pgwRecord></CallEventRecord>`,
    record: {
      type: 'pgwRecord',
      value: {
        recordType: 85,
        servedIMSI: imsiHex,
        'p-GWAddress': gwRec,
        chargingID: 4000000000 + i,
        servingNodeAddress: [gwRec],
        accessPointNameNI: 'ims.mnc001.mcc262.gprs',
        recordOpeningTime: ts,
        duration: i % 3600,
        causeForRecClosing: 0,
        chargingCharacteristics: '0400',
        listOfServiceData: containers.map((c) => ({
          ratingGroup: c.ratingGroup,
          serviceConditionChange: ['serviceStop'],
          datavolumeFBCUplink: c.up,
          datavolumeFBCDownlink: c.down,
          timeOfReport: ts,
        })),
        servingNodeType: ['gTPSGW'],
      },
    },
  };
}
